import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../../src/media/processes.js";
import { type MediaEnvironment, startMediaEnvironment } from "../../src/runner/media-env.js";
import { playWav } from "../../src/runner/voice/clips.js";

/**
 * The bot's microphone (media-env.ts), measured on a real PulseAudio daemon: what the bot says is
 * in its microphone and in what it records (the platform never plays it back); what the meeting
 * plays is in what it records and never in its microphone, or the bot would send the meeting back
 * into the call.
 */
let media: MediaEnvironment;
let dir: string;
beforeAll(async () => {
  media = await startMediaEnvironment({ width: 320, height: 240 });
  dir = await mkdtemp(join(tmpdir(), "meetbot-mic-"));
  for (const [name, frequency] of [
    ["voice", 880],
    ["meeting", 440],
  ] as const) {
    execFileSync("ffmpeg", [
      ...["-y", "-loglevel", "error", "-f", "lavfi", "-i", `sine=f=${frequency}:d=3`],
      ...["-ar", "48000", "-ac", "1", join(dir, `${name}.wav`)],
    ]);
  }
}, 30_000);
afterAll(async () => {
  await media?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The mean volume (dBFS) of 1.5 s of `source`, recorded while `play` plays. */
async function levelOf(source: string, play: () => Promise<void>): Promise<number> {
  const env = childEnv(media.pulseEnv);
  const capture = spawn(
    "ffmpeg",
    ["-hide_banner", "-f", "pulse", "-i", source, "-t", "1.5", "-af", "volumedetect", "-f", "null", "-"],
    { env },
  );
  let stderr = "";
  capture.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const playing = play();
  await new Promise((resolve) => capture.once("exit", resolve));
  await playing;
  const mean = /mean_volume: (-?[\d.]+) dB/.exec(stderr)?.[1];
  if (mean === undefined) throw new Error(`no level from ffmpeg: ${stderr.slice(-500)}`);
  return Number(mean);
}

const playing = (name: string, sink: string) => async () => {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 2_500);
  await playWav(media.pulseEnv, sink, join(dir, `${name}.wav`), stop.signal);
  clearTimeout(timer);
};

describe("the bot's microphone", () => {
  it("carries what the bot says, which is also in what the bot records", async () => {
    expect(await levelOf("default", playing("voice", media.voiceSink))).toBeGreaterThan(-40);
    expect(await levelOf(media.audioSource, playing("voice", media.voiceSink))).toBeGreaterThan(-40);
  });

  it("never carries what the meeting plays, which the bot records", async () => {
    expect(
      await levelOf(media.audioSource, playing("meeting", media.pulseEnv.PULSE_SINK as string)),
    ).toBeGreaterThan(-40);
    expect(await levelOf("default", playing("meeting", media.pulseEnv.PULSE_SINK as string))).toBeLessThan(
      -80,
    );
  });

  it("the meeting alone (an agent's stream) has what the meeting plays and never the bot's voice", async () => {
    const meeting = media.pulseEnv.PULSE_SINK as string;
    expect(await levelOf(media.callSource, playing("meeting", meeting))).toBeGreaterThan(-40);
    expect(await levelOf(media.callSource, playing("voice", media.voiceSink))).toBeLessThan(-80);
  });

  it("a stopped sound stops at once", async () => {
    const stop = new AbortController();
    const play = playWav(media.pulseEnv, media.voiceSink, join(dir, "voice.wav"), stop.signal);
    stop.abort();
    await play;
    expect(await levelOf("default", async () => {})).toBeLessThan(-80);
  });
});
