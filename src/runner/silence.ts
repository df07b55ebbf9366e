import type { EventEmitter } from "node:events";
import type { Logger } from "pino";
import { SILENCE_LEVEL_DBFS } from "../core/index.js";

/** Readings of the recorded sound's level, in dBFS, as the recorder measures them. */
export type AudioLevels = EventEmitter<{ level: [dbfs: number] }>;

/**
 * The silence clock (automaticLeave.silenceTimeout): calls `onSilent` once no reading above
 * SILENCE_LEVEL_DBFS came for `timeoutMs`, counted from now (the recording has just started).
 * No readings at all count as silence too: a recorder that hears nothing reports nothing to
 * reset the clock. Halfway it logs that the call is silent, and if sound comes back after that,
 * that it did. Returns the function that stops the clock; a timeout of 0 never starts it.
 */
export function watchSilence(opts: {
  timeoutMs: number;
  levels: AudioLevels;
  log: Logger;
  onSilent: () => void;
  /**
   * Now, in ms, on the clock the silence is counted on: the recording's, which stands still while
   * the recording is paused (a paused recording hears nothing, and that is no silent call).
   */
  now?: () => number;
}): () => void {
  const { timeoutMs, levels, log, onSilent, now = Date.now } = opts;
  if (timeoutMs === 0) {
    log.info("silence timeout off: the bot does not leave a silent call");
    return () => {};
  }
  log.info({ silenceTimeoutMs: timeoutMs, levelDbfs: SILENCE_LEVEL_DBFS }, "silence clock started");
  let lastSoundAt = now();
  let warned = false;
  let timer: NodeJS.Timeout | undefined;

  // One timer, re-armed from the last sound when it fires, rather than reset on each of the two
  // readings a second.
  const check = () => {
    const silentMs = now() - lastSoundAt;
    if (silentMs >= timeoutMs) {
      stop();
      log.info(
        { silentMs, silenceTimeoutMs: timeoutMs, levelDbfs: SILENCE_LEVEL_DBFS },
        "leaving: no sound in the call",
      );
      onSilent();
      return;
    }
    if (!warned && silentMs >= timeoutMs / 2) {
      warned = true;
      log.info(
        { silentMs, leavingInMs: timeoutMs - silentMs, levelDbfs: SILENCE_LEVEL_DBFS },
        "the call is silent; leaving unless there is sound",
      );
    }
    timer = setTimeout(check, (warned ? timeoutMs : timeoutMs / 2) - silentMs);
  };
  const onLevel = (dbfs: number) => {
    if (dbfs <= SILENCE_LEVEL_DBFS) return;
    if (warned) log.info({ dbfs, silentMs: now() - lastSoundAt }, "sound again: silence clock reset");
    warned = false;
    lastSoundAt = now();
  };
  const stop = () => {
    clearTimeout(timer);
    levels.off("level", onLevel);
  };

  levels.on("level", onLevel);
  timer = setTimeout(check, timeoutMs / 2);
  return stop;
}
