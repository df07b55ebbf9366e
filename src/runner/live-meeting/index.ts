import type { Logger } from "pino";
import type { Page } from "playwright";
import type { PageSnapshot, PlatformAdapter } from "../../../platforms/adapter.js";
import type { BotConfig, CallbackEventBody } from "../../core/index.js";
import { CommandRefusal } from "../commands.js";
import type { PageWatcher } from "../page-watcher.js";
import type { RecordingClock } from "../recording-clock.js";
import { type CaptionsSource, startCaptions } from "./captions.js";
import { MeetingChat } from "./chat.js";
import { SpeakerDirectory } from "./speakers.js";

export interface LiveMeetingContext {
  page: Page;
  adapter: PlatformAdapter;
  config: Pick<BotConfig, "liveTranscript" | "chat">;
  /** The page's readings: the roster names the speakers of captions and chat. */
  watcher: PageWatcher;
  /** The name the meeting shows for the bot. */
  selfName: string;
  report(body: CallbackEventBody): void;
  log: Logger;
  /**
   * THE FALLBACK HOOK. Called once when `liveTranscript.source` is "captions" and the bot cannot
   * turn captions on (the host or tenant switched them off, the control is missing or disabled, the
   * adapter has none); `reason` says which, and `transcript.source {source: "captions", state:
   * "unavailable", reason}` is already reported. A bot with `liveTranscript.fallback` starts its
   * pocketsphinx source here, which then reports `transcript.source {source: "pocketsphinx",
   * state: "fallback"}`.
   */
  onCaptionsUnavailable(reason: string): void;
}

/**
 * The live meeting of one bot in a call: its captions (when `liveTranscript.source` is
 * "captions") and the chat (always: reading it costs one open panel and an observer, and the API
 * offers every bot's chat). Created when the bot is in the call (a chat command may come at
 * once), started once the recording runs and the roster is open, stopped before CALL_ENDED.
 */
export class LiveMeeting {
  private readonly speakers: SpeakerDirectory;
  private readonly onSnapshot = (snap: PageSnapshot) => this.speakers.update(snap);
  private captions: CaptionsSource | null = null;
  private chat: MeetingChat | null = null;
  private stopped = false;
  private markStarted!: () => void;
  /** Settles when start() or stop() is called: a chat command waits for it. */
  private readonly started = new Promise<void>((resolve) => {
    this.markStarted = resolve;
  });

  constructor(private readonly ctx: LiveMeetingContext) {
    this.speakers = new SpeakerDirectory(ctx.selfName);
    this.speakers.update(ctx.watcher.current);
    ctx.watcher.on("change", this.onSnapshot);
  }

  /** `clock`: the recording's clock, the clock of every utterance. */
  start(clock: RecordingClock): void {
    if (this.stopped) return;
    this.markStarted();
    const { page, adapter, config, report, log } = this.ctx;
    const note = (hook: string, variant: string) => log.info({ hook, variant }, "live hook matched");
    const live = adapter.live;
    if (!live) {
      if (config.liveTranscript?.source === "captions") {
        const reason = `the ${adapter.platform} adapter reads no captions`;
        report({ type: "transcript.source", data: { source: "captions", state: "unavailable", reason } });
        this.ctx.onCaptionsUnavailable(reason);
      }
      return;
    }
    if (config.liveTranscript?.source === "captions") {
      this.captions = startCaptions({
        page,
        live,
        options: config.liveTranscript,
        clock,
        speakers: this.speakers,
        report,
        log: log.child({ component: "captions" }),
        note,
        onUnavailable: (reason) => this.ctx.onCaptionsUnavailable(reason),
      });
    }
    const chat = new MeetingChat({
      page,
      live,
      platform: adapter.platform,
      speakers: this.speakers,
      selfName: this.ctx.selfName,
      report,
      log: log.child({ component: "chat" }),
      note,
    });
    this.chat = chat;
    // After the captions' clicks: both open menus and panels on the same page.
    void chat.start(this.captions?.ready);
    const onJoin = config.chat.onJoin;
    if (onJoin) {
      chat.send(onJoin).then(
        () => log.info("chat.onJoin sent"),
        (error: Error) => log.warn({ err: error.message }, "chat.onJoin could not be sent"),
      );
    }
  }

  /** The `chat` command: types `payload.text` into the meeting's chat. Throws a CommandRefusal. */
  async sendChat(payload: Record<string, unknown>): Promise<Record<string, unknown>> {
    const text = typeof payload.text === "string" ? payload.text.trim() : "";
    if (!text) throw new CommandRefusal("COMMAND_FAILED", "a chat command needs a text");
    await this.started;
    if (this.stopped) throw new CommandRefusal("NOT_IN_CALL", "the call is over");
    if (!this.chat) {
      throw new CommandRefusal("CHAT_UNAVAILABLE", `the ${this.ctx.adapter.platform} adapter has no chat`);
    }
    return this.chat.send(text);
  }

  /**
   * The call is over: stops reading; every utterance that had a partial has its final, and the
   * chat's page action under way is over, when this resolves.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.markStarted();
    this.ctx.watcher.off("change", this.onSnapshot);
    await Promise.all([this.chat?.stop(), this.captions?.stop()]);
  }
}
