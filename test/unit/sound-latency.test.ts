import { expect, it } from "vitest";
import { browserSound, ownLatencyEnv } from "../../src/runner/media-env.js";

it("lets a low-latency client keep its own latency, and nothing else of the bot's sound changes", () => {
  const pulseEnv = {
    XDG_RUNTIME_DIR: "/tmp/meetbot-pulse-x",
    PULSE_SERVER: "unix:/tmp/meetbot-pulse-x/pulse/native",
    PULSE_SINK: "meetbot_call",
    PULSE_LATENCY_MSEC: "100",
  };
  expect(ownLatencyEnv(pulseEnv)).toEqual({
    XDG_RUNTIME_DIR: "/tmp/meetbot-pulse-x",
    PULSE_SERVER: "unix:/tmp/meetbot-pulse-x/pulse/native",
    PULSE_SINK: "meetbot_call",
  });
  expect(pulseEnv.PULSE_LATENCY_MSEC).toBe("100"); // a copy: the others keep theirs
});

it("holds a bot's Chromium to the sound path's latency unless the bot has a live agent", () => {
  const pulseEnv = { PULSE_SERVER: "unix:/tmp/meetbot-pulse-x/pulse/native", PULSE_LATENCY_MSEC: "100" };
  // 100 ms blocks at 48 kHz, for the daemon and for Chromium's own audio thread alike.
  expect(browserSound(pulseEnv, { promptMicrophone: false })).toEqual({
    env: pulseEnv,
    args: ["--audio-buffer-size=4800"],
  });
  expect(browserSound(pulseEnv, { promptMicrophone: true })).toEqual({
    env: { PULSE_SERVER: "unix:/tmp/meetbot-pulse-x/pulse/native" },
    args: [],
  });
});
