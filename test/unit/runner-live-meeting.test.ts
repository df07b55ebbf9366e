import pino from "pino";
import type { Page } from "playwright";
import { describe, expect, it, vi } from "vitest";
import type { PlatformAdapter } from "../../platforms/adapter.js";
import {
  type CaptionsOutcome,
  type CaptionsReading,
  type ChatMessageReading,
  type ChatReading,
  ChatUnavailable,
  type LiveAdapter,
} from "../../platforms/live.js";
import { MEET_LIVE_HOOKS } from "../../platforms/meet/selectors.js";
import { BotConfig, type BotConfigInput, type CallbackEventBody } from "../../src/core/index.js";
import { CommandRefusal } from "../../src/runner/commands.js";
import { LiveMeeting } from "../../src/runner/live-meeting/index.js";
import { PageWatcher } from "../../src/runner/page-watcher.js";
import { RecordingClock } from "../../src/runner/recording-clock.js";

/**
 * The live meeting's glue (src/runner/live-meeting/index.ts) with a fake page and a fake platform:
 * what it reports, in which order, what the chat command answers, and the fallback hook. The page
 * "shows" readings through the feed's binding, as the in-page observer calls it.
 */

class FakePage {
  readonly bindings = new Map<string, (json: string) => void>();
  /** The browser went away: the page's calls fail as Playwright's do. */
  closed = false;
  async exposeFunction(name: string, callback: (json: string) => void): Promise<void> {
    if (this.closed) throw new Error("page.exposeFunction: Target page, context or browser has been closed");
    this.bindings.set(name, callback);
  }
  async evaluate(): Promise<void> {}
  async addInitScript(): Promise<void> {}
  show(feed: "captions", reading: CaptionsReading): void;
  show(feed: "chat", reading: ChatReading): void;
  show(feed: string, reading: unknown): void {
    this.bindings.get(`__meetbotFeed_${feed}`)?.(JSON.stringify(reading));
  }
}

const fromAlice = (id: string, text: string): ChatMessageReading => ({
  id,
  text,
  sender: { name: "Alice", nth: 0 },
  own: false,
});

function setUp(
  opts: { captions?: CaptionsOutcome; noChat?: boolean; config?: Partial<BotConfigInput> } = {},
) {
  const page = new FakePage();
  const reported: CallbackEventBody[] = [];
  const unavailable: string[] = [];
  /** The messages the fake chat list shows. */
  const list: ChatMessageReading[] = [fromAlice("m-1", "Hello")];
  const live: LiveAdapter = {
    captions: { region: "#r", text: ".t", entry: ".e", speakerName: ".n", selfTexts: [] },
    chat: MEET_LIVE_HOOKS.chat,
    microphone: MEET_LIVE_HOOKS.microphone,
    turnOnCaptions: vi.fn(async () => opts.captions ?? { on: true as const, language: "en-US" }),
    openChat: vi.fn(async () => {
      if (opts.noChat) throw new ChatUnavailable("the call shows no chat button");
    }),
    sendChat: vi.fn(async (_page: Page, text: string) => {
      // The platform takes it and shows it in the list (the composer cleared).
      list.push({ id: `m-${list.length + 1}`, text, sender: { self: true }, own: true });
      setTimeout(() => page.show("chat", { open: true, messages: [...list] }), 5);
    }),
  };
  const adapter = { platform: "google", live } as unknown as PlatformAdapter;
  const watcher = new PageWatcher();
  watcher.update({ phase: "in_call", participants: [{ id: "p-1", name: "Alice" }] });
  const config = BotConfig.parse({
    botId: 1,
    meetingInfo: { platform: "google", meetingUrl: "https://meet.example.com/abc-defg-hij" },
    callback: { baseUrl: "http://127.0.0.1:9", token: "0123456789abcdef0123" },
    upload: { url: "http://127.0.0.1:9/v1/bot-callbacks/1/recording" },
    liveTranscript: { source: "captions" },
    ...opts.config,
  });
  const meeting = new LiveMeeting({
    page: page as unknown as Page,
    adapter,
    config,
    watcher,
    selfName: "Note Bot",
    report: (body) => reported.push(body),
    log: pino({ level: "silent" }),
    onCaptionsUnavailable: (reason) => unavailable.push(reason),
  });
  const of = (type: string) => reported.filter((e) => e.type === type).map((e) => e.data);
  return { page, live, list, meeting, reported, unavailable, of };
}

describe("the live meeting", () => {
  it("turns captions on, says so, and streams the entries: partials, then the final at stop", async () => {
    const { page, meeting, of } = setUp();
    meeting.start(new RecordingClock(new Date(Date.now() - 1_000)));
    await vi.waitFor(() =>
      expect(of("transcript.source")).toEqual([{ source: "captions", state: "active" }]),
    );
    await vi.waitFor(() => expect(page.bindings.has("__meetbotFeed_captions")).toBe(true));
    page.show("captions", {
      on: true,
      entries: [{ key: "e1", text: "I will send", speaker: { name: "Alice", nth: 0 } }],
    });
    expect(of("transcript.partial")).toEqual([
      expect.objectContaining({
        text: "I will send",
        speaker: { participantId: "p-1", name: "Alice" },
        language: "en-US",
        source: "captions",
        startMs: expect.toSatisfy((ms: number) => ms >= 1_000),
      }),
    ]);
    await meeting.stop();
    expect(of("transcript.final").map((u) => (u as { text: string }).text)).toEqual(["I will send"]);
    page.show("captions", { on: true, entries: [{ key: "e2", text: "too late", speaker: null }] });
    expect(of("transcript.partial")).toHaveLength(1);
  });

  it("reports captions unavailable with the reason and calls the fallback hook once", async () => {
    const reason = "Meet's captions button is disabled: captions are off for this meeting";
    const { meeting, of, unavailable } = setUp({ captions: { on: false, reason } });
    meeting.start(new RecordingClock(new Date()));
    await vi.waitFor(() => expect(unavailable).toEqual([reason]));
    expect(of("transcript.source")).toEqual([{ source: "captions", state: "unavailable", reason }]);
    await meeting.stop();
    expect(of("transcript.partial")).toEqual([]);
  });

  it("reads the chat once per message, sends onJoin first and once, answers a send with the message's id", async () => {
    const { page, live, list, meeting, of } = setUp({ config: { chat: { onJoin: "I take notes" } } });
    const answer = meeting.sendChat({ text: "From the API" });
    meeting.start(new RecordingClock(new Date()));
    await expect(answer).resolves.toEqual({ messageId: "m-3" });
    expect(vi.mocked(live.sendChat).mock.calls.map(([, text]) => text)).toEqual([
      "I take notes",
      "From the API",
    ]);
    page.show("chat", { open: true, messages: [...list] });
    expect(
      of("chat.message").map((m) => [
        (m as { messageId: string }).messageId,
        (m as { fromBot: boolean }).fromBot,
      ]),
    ).toEqual([
      ["m-1", false],
      ["m-2", true],
      ["m-3", true],
    ]);
    expect(of("chat.message")[0]).toMatchObject({
      sender: { participantId: "p-1", name: "Alice" },
      text: "Hello",
    });
    await meeting.stop();
    await expect(meeting.sendChat({ text: "after the call" })).rejects.toMatchObject({ code: "NOT_IN_CALL" });
  });

  it("refuses sends where the call has no chat (CHAT_UNAVAILABLE) or the platform would (too long)", async () => {
    const { live, meeting } = setUp({ noChat: true, config: { liveTranscript: undefined } });
    meeting.start(new RecordingClock(new Date()));
    const refusal = await meeting.sendChat({ text: "hi" }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(CommandRefusal);
    expect(refusal).toMatchObject({ code: "CHAT_UNAVAILABLE", message: "the call shows no chat button" });
    expect(live.sendChat).not.toHaveBeenCalled();
    expect(live.turnOnCaptions).not.toHaveBeenCalled();

    const other = setUp({ config: { liveTranscript: undefined } });
    other.meeting.start(new RecordingClock(new Date()));
    await expect(other.meeting.sendChat({ text: "x".repeat(501) })).rejects.toMatchObject({
      code: "COMMAND_FAILED",
      message: expect.stringContaining("at most 500"),
    });
    await expect(other.meeting.sendChat({ text: "  " })).rejects.toMatchObject({ code: "COMMAND_FAILED" });
    await other.meeting.stop();
  });

  it("stops quietly when the browser was gone before the chat could be read", async () => {
    // A runner once died of the unhandled rejection this left, after its browser crashed, and
    // never finalized its recording.
    const { page, meeting } = setUp({ config: { liveTranscript: undefined } });
    page.closed = true;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      meeting.start(new RecordingClock(new Date()));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await meeting.stop();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("stops only once the chat panel it is opening is open: the bot's Leave click comes next", async () => {
    const { live, meeting } = setUp({ config: { liveTranscript: undefined } });
    let opened!: () => void;
    vi.mocked(live.openChat).mockImplementationOnce(() => new Promise<void>((resolve) => (opened = resolve)));
    meeting.start(new RecordingClock(new Date()));
    await vi.waitFor(() => expect(live.openChat).toHaveBeenCalledTimes(1));
    let stopped = false;
    const stopping = meeting.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    opened();
    await stopping;
    expect(stopped).toBe(true);
  });
});
