import type { Logger } from "pino";
import { END_PHASES, type PageSnapshot, type Participant } from "../../platforms/adapter.js";
import type { AutomaticLeave, SubCode } from "../core/index.js";
import { BotFailure } from "./errors.js";
import type { PageWatcher } from "./page-watcher.js";
import type { ReporterPort } from "./ports.js";
import { type AudioLevels, watchSilence } from "./silence.js";

/**
 * The bot's time in the call: reports everyone who joins or leaves and who speaks when, and
 * resolves with the
 * CALL_ENDED subCode once the call is over for the bot: the meeting ended, the bot was removed,
 * nobody came (noOneJoinedTimeout), everyone left (everyoneLeftTimeout), nothing was heard
 * (silenceTimeout, from the recorder's `levels`), it stayed maxDuration, or a stop was requested.
 * A browser crash rejects with its BotFailure.
 */
export function watchCall(opts: {
  watcher: PageWatcher;
  reporter: ReporterPort;
  automaticLeave: AutomaticLeave;
  levels: AudioLevels;
  signal: AbortSignal;
  log: Logger;
}): Promise<SubCode> {
  const { watcher, reporter, automaticLeave, levels, signal, log } = opts;
  const present = new Map<string, Participant>();
  const speaking = new Map<string, Participant>();
  let anyoneSeen = false;
  let aloneTimer: NodeJS.Timeout | undefined;
  let maxDurationTimer: NodeJS.Timeout | undefined;
  let stopSilenceClock = () => {};

  return new Promise<SubCode>((resolve, reject) => {
    const finish = (outcome: SubCode | BotFailure) => {
      clearTimeout(aloneTimer);
      clearTimeout(maxDurationTimer);
      stopSilenceClock();
      updateSpeakers(new Set());
      watcher.off("change", onChange);
      signal.removeEventListener("abort", onAbort);
      if (outcome instanceof BotFailure) reject(outcome);
      else resolve(outcome);
    };

    // Alone in the call: before anyone came, wait noOneJoinedTimeout; after everyone left,
    // everyoneLeftTimeout. Someone (re)joining cancels it.
    const updateAloneTimer = () => {
      if (present.size > 0) {
        clearTimeout(aloneTimer);
        aloneTimer = undefined;
        return;
      }
      if (aloneTimer) return;
      const [timeout, subCode]: [number, SubCode] = anyoneSeen
        ? [automaticLeave.everyoneLeftTimeout, "EVERYONE_LEFT"]
        : [automaticLeave.noOneJoinedTimeout, "NO_ONE_JOINED"];
      aloneTimer = setTimeout(() => {
        log.info({ subCode, timeoutMs: timeout }, "leaving: alone in the call");
        finish(subCode);
      }, timeout);
    };

    const onChange = (snap: PageSnapshot) => {
      const ended = END_PHASES[snap.phase];
      if (ended) return finish(ended);
      if (snap.phase !== "in_call") return; // a transient render; the roster is read when back
      const now = new Map(snap.participants.map((p) => [p.id, p]));
      for (const [id, p] of now) {
        if (present.has(id)) continue;
        present.set(id, p);
        anyoneSeen = true;
        reporter.report({ type: "participant.joined", data: { participantId: id, participantName: p.name } });
      }
      for (const [id, p] of present) {
        if (now.has(id)) continue;
        present.delete(id);
        reporter.report({ type: "participant.left", data: { participantId: id, participantName: p.name } });
      }
      updateSpeakers(new Set((snap.speakers ?? []).filter((id) => present.has(id))));
      updateAloneTimer();
    };

    // Speaking starts and stops, from the platform's own indicator; someone who left stops.
    const updateSpeakers = (now: Set<string>) => {
      for (const id of now) {
        if (speaking.has(id)) continue;
        const p = present.get(id) as Participant;
        speaking.set(id, p);
        reporter.report({ type: "speaker.started", data: { participantId: id, participantName: p.name } });
      }
      for (const [id, p] of speaking) {
        if (now.has(id)) continue;
        speaking.delete(id);
        reporter.report({ type: "speaker.stopped", data: { participantId: id, participantName: p.name } });
      }
    };

    const onAbort = () => {
      const reason = signal.reason;
      finish(reason instanceof BotFailure ? reason : "LEFT_ON_REQUEST");
    };

    if (signal.aborted) return onAbort();
    maxDurationTimer = setTimeout(() => {
      log.info({ maxDurationMs: automaticLeave.maxDuration }, "leaving: maximum duration reached");
      finish("MAX_DURATION");
    }, automaticLeave.maxDuration);
    stopSilenceClock = watchSilence({
      timeoutMs: automaticLeave.silenceTimeout,
      levels,
      log,
      onSilent: () => finish("SILENCE"),
    });
    watcher.on("change", onChange);
    signal.addEventListener("abort", onAbort, { once: true });
    onChange(watcher.current);
  });
}
