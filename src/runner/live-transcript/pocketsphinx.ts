import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { MonitorAudio, silencePaused, StreamClock } from "./monitor-audio.js";
import { missingModel, PocketsphinxDecoder } from "./pocketsphinx-decoder.js";
import { LiveRecognizer } from "./recognizer.js";
import { SpeechSegmenter } from "./speech-segmenter.js";
import type { LiveTranscriber, LiveTranscriptContext } from "./types.js";
import { UtteranceReports } from "./utterances.js";

/** How long the stop waits for the last utterances to be decoded before settling them as they are. */
const SETTLE_TIMEOUT_MS = 20_000;

/**
 * The languages the offline model speaks: Debian's pocketsphinx-en-us is US English, and nothing
 * else installs without a download. Null when `language` is not one of them.
 */
export function pocketsphinxLanguage(language: string | undefined): string | null {
  if (language === undefined) return "en-US";
  return /^en(-us)?$/i.test(language) ? language : null;
}

/**
 * The `pocketsphinx` source: the bot's own meeting sound (a reader of its sound card's monitor),
 * cut into utterances by level, decoded by one long-lived pocketsphinx as people talk
 * (recognizer.ts). Reports `transcript.source` `active` once the decoder has loaded, or
 * `unavailable` with the reason (another language, pocketsphinx or its model missing, the
 * decoder failing) and then nothing more.
 */
export function startPocketsphinx(
  context: LiveTranscriptContext,
  media: { audioSource: string; pulseEnv: Record<string, string> },
  state: "active" | "fallback" = "active",
): LiveTranscriber {
  const { options, report, log } = context;
  const unavailable = (reason: string) => {
    log.warn({ reason }, "live transcript unavailable");
    report({ type: "transcript.source", data: { source: "pocketsphinx", state: "unavailable", reason } });
  };
  const language = pocketsphinxLanguage(options.language);
  if (!language) {
    unavailable(
      `pocketsphinx only knows US English (en, en-US), not "${options.language}"; no live transcript`,
    );
    return { stop: () => Promise.resolve() };
  }

  const dir = path.join(context.workDir, "live-transcript");
  const clock = new StreamClock((wallMs) => context.clock.at(wallMs));
  const decoder = new PocketsphinxDecoder(dir);
  let monitor: MonitorAudio | null = null;
  let segmenter: SpeechSegmenter | null = null;
  let recognizer: LiveRecognizer | null = null;
  let over = false;

  const end = (why: string) => {
    if (over) return;
    over = true;
    void monitor?.stop();
    recognizer?.abandon(why);
    unavailable(why);
  };

  const started = (async () => {
    const missing = await missingModel();
    if (missing) return end(missing);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const live = new LiveRecognizer({
      decoder,
      dir,
      toRecordingMs: (sample) => clock.toRecordingMs(sample),
      reports: new UtteranceReports({
        source: "pocketsphinx",
        idPrefix: "ps",
        language,
        speakers: context.speakers,
        report,
      }),
      log,
      onGiveUp: end,
    });
    recognizer = live;
    const cutter = new SpeechSegmenter((event) => live.onSegment(event));
    segmenter = cutter;
    // A turn to someone else ends the utterance under way at its next short pause.
    context.speakers.onTurnChange(() => cutter.speakerChanged());
    // The sound is read from now on while the model loads: speech meanwhile waits for it.
    monitor = new MonitorAudio({
      ...media,
      source: media.audioSource,
      clock,
      // What played while the recording was paused is not heard: silence goes in instead, and an
      // utterance under way ends.
      onAudio: (pcm) => cutter.push(silencePaused(pcm, clock, (wallMs) => context.clock.pausedAt(wallMs))),
      onLost: (why) => end(`the meeting's sound can no longer be read: ${why}`),
    });
    monitor.start();
    try {
      await live.warmUp();
    } catch (error) {
      return end(`pocketsphinx could not be started: ${(error as Error).message}`);
    }
    if (over) return;
    log.info({ language }, "live transcript: pocketsphinx listening");
    report({ type: "transcript.source", data: { source: "pocketsphinx", state } });
  })().catch((error: Error) => end(`the live transcript failed to start: ${error.message}`));

  let stopping: Promise<void> | null = null;
  const stop = async () => {
    await started;
    if (!over) {
      await monitor?.stop();
      segmenter?.flush();
      const timer = setTimeout(
        () => recognizer?.abandon(`not settled ${SETTLE_TIMEOUT_MS} ms after the call`),
        SETTLE_TIMEOUT_MS,
      );
      await recognizer?.settled();
      clearTimeout(timer);
      over = true;
    }
    await decoder.close();
    await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch(() => {});
    log.info("live transcript: stopped");
  };
  return {
    stop: () => {
      stopping ??= stop().catch((error: Error) => {
        log.warn({ err: error.message }, "live transcript: trouble while stopping");
      });
      return stopping;
    },
  };
}
