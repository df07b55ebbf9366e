import type { Logger } from "pino";
import type { Page } from "playwright";
import { type LiveAdapter, type LiveNote, readCaptions } from "../../../platforms/live.js";
import type { CallbackEventBody, LiveTranscriptOptions } from "../../core/index.js";
import type { RecordingClock } from "../recording-clock.js";
import { waitAtMost } from "../wait-at-most.js";
import { CaptionTracker } from "./caption-tracker.js";
import { feedFromPage } from "./page-feed.js";
import type { SpeakerDirectory } from "./speakers.js";

/** How long stop() waits for a turn-on under way (the page's clicks) before it lets the call end. */
const STOP_WAIT_MS = 1_000;

export interface CaptionsContext {
  page: Page;
  live: LiveAdapter;
  options: LiveTranscriptOptions;
  /** The instant that is 0 ms of the recording: utterance times are on its clock. */
  clock: RecordingClock;
  speakers: SpeakerDirectory;
  report(body: CallbackEventBody): void;
  log: Logger;
  note: LiveNote;
  /**
   * Captions could not be turned on (`reason` says why; `transcript.source` unavailable is
   * reported already). The live transcript's fallback plugs in here: see LiveMeetingContext.
   */
  onUnavailable(reason: string): void;
}

/** The captions source of a live transcript, as the lifecycle holds it. */
export interface CaptionsSource {
  /** Settles once captions are on and read (or found unavailable): the page's clicks are done. */
  ready: Promise<void>;
  /** Stops reading; every utterance that had a partial gets its final before this resolves. */
  stop(): Promise<void>;
}

/**
 * The `captions` live transcript: turns the bot's own captions on the platform's way, reports
 * `transcript.source` (active, or unavailable with the reason), then reads the caption entries as
 * they change (a MutationObserver in the page) into partials and finals (CaptionTracker).
 */
export function startCaptions(ctx: CaptionsContext): CaptionsSource {
  const { page, live, options, report, log } = ctx;
  let stopped = false;
  let tracker: CaptionTracker | null = null;
  let stopFeed = () => {};
  const unavailable = (reason: string) => {
    log.warn({ reason }, "captions unavailable");
    report({ type: "transcript.source", data: { source: "captions", state: "unavailable", reason } });
    ctx.onUnavailable(reason);
  };
  const ready = (async () => {
    const outcome = await live
      .turnOnCaptions(page, { ...(options.language ? { language: options.language } : {}), note: ctx.note })
      .catch((error: Error) => ({
        on: false as const,
        reason: `could not turn the captions on: ${firstLine(error.message)}`,
      }));
    if (stopped) return;
    if (!outcome.on) return unavailable(outcome.reason);
    const reading = new CaptionTracker({
      clock: () => ctx.clock.now(),
      paused: () => ctx.clock.paused,
      resolve: (ref) => ctx.speakers.resolve(ref),
      emit: (type, utterance) => report({ type, data: utterance }),
      language: outcome.language,
    });
    tracker = reading;
    report({ type: "transcript.source", data: { source: "captions", state: "active" } });
    log.info({ language: outcome.language }, "captions on");
    stopFeed = await feedFromPage(page, "captions", readCaptions, live.captions, ({ entries }) =>
      reading.update(entries),
    );
    if (stopped) stopFeed();
  })().catch((error: Error) => {
    if (!stopped) unavailable(`could not read the captions: ${firstLine(error.message)}`);
  });
  return {
    ready,
    stop: async () => {
      stopped = true;
      // A turn-on still clicking through menus has no utterance yet: the call's end does not wait for it.
      await waitAtMost(ready, STOP_WAIT_MS);
      stopFeed();
      tracker?.stop();
    },
  };
}

export const firstLine = (message: string) => (message.split("\n")[0] ?? "").slice(0, 500);
