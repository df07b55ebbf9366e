import { describe, expect, it } from "vitest";
import { BotConfig, isPlatformHost, MeetingInfo } from "../../src/core/index.js";

const minimal = {
  botId: 7,
  meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
  callback: { baseUrl: "http://127.0.0.1:8080", token: "0123456789abcdef0123" },
  upload: { url: "http://127.0.0.1:8080/v1/bot-callbacks/7/recording" },
};

describe("BotConfig", () => {
  it("fills in the documented defaults", () => {
    const config = BotConfig.parse(minimal);
    expect(config.heartbeatInterval).toBe(5000);
    expect(config.automaticLeave).toEqual({
      waitingRoomTimeout: 300000,
      noOneJoinedTimeout: 300000,
      everyoneLeftTimeout: 300000,
      maxDuration: 14_400_000,
      silenceTimeout: 1_800_000,
      botNames: expect.arrayContaining(["notetaker", "otter", "fireflies", "read.ai", "fathom", "tactiq"]),
      onlyBotsTimeout: 60_000,
    });
    expect(config.recording).toEqual({ width: 1280, height: 720, frameRate: 25, video: true });
    expect(config.botDisplayName).toBe("Meetbot");
  });

  it("takes onlyBotsTimeout 0 (off) or 1000 ms and more, and bot names of 1-100 characters", () => {
    const leave = (automaticLeave: unknown) => BotConfig.safeParse({ ...minimal, automaticLeave });
    expect(leave({ onlyBotsTimeout: 0 }).data?.automaticLeave.onlyBotsTimeout).toBe(0);
    expect(leave({ onlyBotsTimeout: 999 }).success).toBe(false);
    expect(leave({ botNames: [] }).data?.automaticLeave.botNames).toEqual([]);
    expect(leave({ botNames: ["  "] }).success).toBe(false);
    expect(leave({ botNames: ["x".repeat(101)] }).success).toBe(false);
  });

  it("takes silenceTimeout 0 (off) or 1000 ms and more, nothing in between", () => {
    const silence = (silenceTimeout: number) =>
      BotConfig.safeParse({ ...minimal, automaticLeave: { silenceTimeout } });
    expect(silence(0).data?.automaticLeave.silenceTimeout).toBe(0);
    expect(silence(1_000).data?.automaticLeave.silenceTimeout).toBe(1_000);
    for (const bad of [1, 999, -1, 86_400_001, 1.5]) {
      expect(
        silence(bad).error?.issues.map((i) => i.path.join(".")),
        String(bad),
      ).toEqual(["automaticLeave.silenceTimeout"]);
    }
  });

  it("names every bad field", () => {
    const result = BotConfig.safeParse({
      ...minimal,
      heartbeatInterval: -1,
      meetingInfo: { platform: "google" },
      callback: { baseUrl: "not a url", token: "short" },
    });
    expect(result.success).toBe(false);
    const paths = result.error?.issues.map((i) => i.path.join(".")).sort();
    expect(paths).toEqual([
      "callback.baseUrl",
      "callback.token",
      "heartbeatInterval",
      "meetingInfo.meetingUrl",
    ]);
  });
});

describe("MeetingInfo", () => {
  it("requires what each platform needs", () => {
    expect(MeetingInfo.safeParse({ platform: "zoom" }).success).toBe(false);
    expect(MeetingInfo.safeParse({ platform: "zoom", meetingId: "123", meetingPassword: "x" }).success).toBe(
      true,
    );
    expect(MeetingInfo.safeParse({ platform: "teams", meetingId: "m" }).success).toBe(false);
    expect(
      MeetingInfo.safeParse({ platform: "teams", meetingId: "m", tenantId: "t", organizerId: "o" }).success,
    ).toBe(true);
    expect(MeetingInfo.safeParse({ platform: "webex", meetingUrl: "https://x.y" }).success).toBe(false);
  });

  it("knows the real platforms' hosts", () => {
    expect(isPlatformHost("google", "meet.google.com")).toBe(true);
    expect(isPlatformHost("google", "evil-meet.google.com.example")).toBe(false);
    expect(isPlatformHost("zoom", "us02web.zoom.us")).toBe(true);
    expect(isPlatformHost("teams", "teams.microsoft.com")).toBe(true);
    expect(isPlatformHost("teams", "127.0.0.1")).toBe(false);
  });
});
