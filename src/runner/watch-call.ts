import type { Logger } from "pino";
import { END_PHASES, type PageSnapshot, type Participant } from "../../platforms/adapter.js";
import type { AutomaticLeave, SubCode } from "../core/index.js";
import { BotFailure } from "./errors.js";
import { botNameMatcher } from "./other-bots.js";
import type { PageWatcher } from "./page-watcher.js";
import type { ReporterPort } from "./ports.js";
import { type AudioLevels, watchSilence } from "./silence.js";

/**
 * The bot's time in the call: reports everyone who joins or leaves and who speaks when, and
 * resolves with the
 * CALL_ENDED subCode once the call is over for the bot: the meeting ended, the bot was removed,
 * nobody came (noOneJoinedTimeout), everyone left (everyoneLeftTimeout), only other bots stayed
 * (onlyBotsTimeout, bots told by automaticLeave.botNames), nothing was heard
 * (silenceTimeout, from the recorder's `levels`), it stayed maxDuration, or a stop was requested.
 * A browser crash rejects with its BotFailure.
 */
type AloneReason = Extract<SubCode, "NO_ONE_JOINED" | "EVERYONE_LEFT" | "ONLY_BOTS_LEFT">;

export function watchCall(opts: {
  watcher: PageWatcher;
  reporter: ReporterPort;
  automaticLeave: AutomaticLeave;
  levels: AudioLevels;
  signal: AbortSignal;
  log: Logger;
  /** The recording's clock in ms (paused time left out): the silence timeout counts on it. */
  recordingNow?: () => number;
}): Promise<SubCode> {
  const { watcher, reporter, automaticLeave, levels, signal, log, recordingNow } = opts;
  const present = new Map<string, Participant>();
  const speaking = new Map<string, Participant>();
  // With onlyBotsTimeout 0 bots count as people, as everyone did before bots were told apart.
  const isBot = automaticLeave.onlyBotsTimeout > 0 ? botNameMatcher(automaticLeave.botNames) : () => false;
  let personSeen = false;
  let aloneTimer: NodeJS.Timeout | undefined;
  let aloneReason: AloneReason | undefined;
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

    // No person in the call (bots are not people): before any person came, wait
    // noOneJoinedTimeout; once everyone left, everyoneLeftTimeout; with only bots left,
    // onlyBotsTimeout. A person (re)joining cancels it; a change of reason starts the new clock.
    const updateAloneTimer = () => {
      const people = [...present.values()].filter((p) => !isBot(p.name)).length;
      const reason: AloneReason | undefined =
        people > 0
          ? undefined
          : !personSeen
            ? "NO_ONE_JOINED"
            : present.size === 0
              ? "EVERYONE_LEFT"
              : "ONLY_BOTS_LEFT";
      if (reason === aloneReason) return;
      clearTimeout(aloneTimer);
      aloneTimer = undefined;
      aloneReason = reason;
      if (!reason) return;
      const timeout: Record<AloneReason, number> = {
        NO_ONE_JOINED: automaticLeave.noOneJoinedTimeout,
        EVERYONE_LEFT: automaticLeave.everyoneLeftTimeout,
        ONLY_BOTS_LEFT: automaticLeave.onlyBotsTimeout,
      };
      aloneTimer = setTimeout(() => {
        log.info({ subCode: reason, timeoutMs: timeout[reason] }, "leaving: no person in the call");
        finish(reason);
      }, timeout[reason]);
    };

    const onChange = (snap: PageSnapshot) => {
      const ended = END_PHASES[snap.phase];
      if (ended) return finish(ended);
      if (snap.phase !== "in_call") return; // a transient render; the roster is read when back
      const now = new Map(snap.participants.map((p) => [p.id, p]));
      for (const [id, p] of now) {
        if (present.has(id)) continue;
        present.set(id, p);
        if (!isBot(p.name)) personSeen = true;
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
      ...(recordingNow ? { now: recordingNow } : {}),
    });
    watcher.on("change", onChange);
    signal.addEventListener("abort", onAbort, { once: true });
    onChange(watcher.current);
  });
}
