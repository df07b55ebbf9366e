import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import type { Decoder } from "./pocketsphinx-decoder.js";
import { SAMPLE_RATE, type SegmentEvent } from "./speech-segmenter.js";
import type { UtteranceReports } from "./utterances.js";

/** pocketsphinx counts 10 ms frames. */
const SAMPLES_PER_DECODER_FRAME = SAMPLE_RATE / 100;
const seconds = (s: number) => Math.round(s * SAMPLE_RATE);

/** The first partial once this much speech was heard: a word or two. */
const FIRST_PARTIAL_SAMPLES = seconds(0.7);
/** Later partials once this much more audio came. */
const PARTIAL_STEP_SAMPLES = seconds(1.5);
/**
 * Partials may keep the decoder busy this share of the time at most: after a partial that took
 * d, the next waits d × (1 / share − 1). Settling (the finals) is never held back.
 */
const PARTIAL_SHARE = 0.2;
/**
 * A partial that decoded a piece this far past the end of its speech (and no further than the
 * silence after it) heard all of it: its words settle the piece, without decoding the same audio
 * again.
 */
const REUSE_MARGIN_SAMPLES = seconds(0.1);
/** A piece this short has no words worth a decode. */
const MIN_PIECE_SAMPLES = seconds(0.1);
/** Decoder failures in a row before the live transcript gives up. */
const MAX_FAILURES = 3;

interface Piece {
  /** Samples from the start of the utterance's file; `to` is null while the piece grows. */
  from: number;
  to: number | null;
  /**
   * Once it is closed (file samples): where its speech ended, and where the silence after that
   * ends (the next piece's speech, or the end of what was heard).
   */
  speechTo: number | null;
  quietTo: number | null;
  /** Its words once decoded for good. */
  text: string | null;
}

interface Utterance {
  key: number;
  file: string;
  fd: number | null;
  /** Stream sample of the file's first sample; speech starts and ends at the `speech` ones. */
  fromSample: number;
  speechFrom: number;
  speechTo: number | null;
  written: number;
  pieces: Piece[];
  ended: boolean;
  /** How far (file samples) the last partial decoded; 0 before the first. */
  partialTo: number;
  /** Where (file samples) the speech last paused; 0 if it has not. */
  pausedAt: number;
  /** The open piece's words in the last partial, and how far it decoded. */
  lastPartial: { piece: Piece; to: number; text: string } | null;
}

type Job =
  | { kind: "settle"; utterance: Utterance; piece: Piece }
  | { kind: "partial"; utterance: Utterance; why: "first" | "pause" | "grown" };

/**
 * Utterances from the segmenter, decoded as they grow:
 * - each utterance's audio goes to a file of its own as it arrives (the decoder reads a stretch
 *   of it by frame numbers, so nothing is copied per decode);
 * - while someone talks, the open piece is decoded again for a partial: first after FIRST_PARTIAL
 *   of speech, then every PARTIAL_STEP of new audio within the PARTIAL_SHARE budget, and at once
 *   when the speech pauses. A partial is the settled pieces' words plus that hypothesis, so a long
 *   utterance never costs more than one piece per partial;
 * - a piece the segmenter closed is settled (decoded once, for good): by its last partial when
 *   that heard past the end of its speech (a pause's decode usually has), else by a decode of its
 *   own. Settling goes before partials, except a new utterance's first one (short, and what makes
 *   new speech show at once);
 * - when an utterance has ended and all its pieces are settled, its final goes out and its file
 *   is removed.
 * One decode at a time: the decoder is one process, and the next job is picked when it is free,
 * so partials never queue up (only the newest audio is worth decoding).
 */
export class LiveRecognizer {
  private readonly utterances: Utterance[] = [];
  private busy = false;
  private partialAllowedAt = 0;
  private failures = 0;
  private gaveUp = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly opts: {
      decoder: Decoder;
      /** The decoder's folder: utterance files go there. */
      dir: string;
      toRecordingMs(sample: number): number;
      reports: UtteranceReports;
      log: Logger;
      /** Called once if the decoder keeps failing: the live transcript is over. */
      onGiveUp(why: string): void;
      now?: () => number;
    },
  ) {}

  /**
   * Loads the model by decoding a tenth of a second of silence: resolves once the decoder works,
   * rejects with why it does not. Utterances that start meanwhile wait for it.
   */
  async warmUp(): Promise<void> {
    this.busy = true;
    const name = "warm-up";
    const file = path.join(this.opts.dir, `${name}.raw`);
    const fd = openSync(file, "w");
    writeSync(fd, Buffer.alloc(seconds(0.1) * 2));
    closeSync(fd);
    try {
      await this.opts.decoder.decode(name, 0, seconds(0.1) / SAMPLES_PER_DECODER_FRAME);
    } finally {
      rmSync(file, { force: true });
      this.busy = false;
    }
    this.pump();
  }

  onSegment(event: SegmentEvent): void {
    if (this.gaveUp) return;
    switch (event.type) {
      case "start": {
        const file = path.join(this.opts.dir, `u${event.utterance}.raw`);
        this.utterances.push({
          key: event.utterance,
          file,
          fd: openSync(file, "w"),
          fromSample: event.fromSample,
          speechFrom: event.speechFromSample,
          speechTo: null,
          written: 0,
          pieces: [{ from: 0, to: null, speechTo: null, quietTo: null, text: null }],
          ended: false,
          partialTo: 0,
          pausedAt: 0,
          lastPartial: null,
        });
        break;
      }
      case "audio": {
        const utterance = this.find(event.utterance);
        if (!utterance?.fd) break;
        writeSync(utterance.fd, event.pcm);
        utterance.written += event.pcm.length / 2;
        break;
      }
      case "pause": {
        const utterance = this.find(event.utterance);
        if (utterance) utterance.pausedAt = event.atSample - utterance.fromSample;
        break;
      }
      case "cut": {
        const utterance = this.find(event.utterance);
        const open = utterance?.pieces.at(-1);
        if (!utterance || !open || open.to !== null) break;
        open.to = event.atSample - utterance.fromSample;
        open.speechTo = event.speechToSample - utterance.fromSample;
        open.quietTo = event.nextSpeechFromSample - utterance.fromSample;
        utterance.pieces.push({ from: open.to, to: null, speechTo: null, quietTo: null, text: null });
        this.settleFromPartial(utterance);
        break;
      }
      case "end": {
        const utterance = this.find(event.utterance);
        const open = utterance?.pieces.at(-1);
        if (!utterance || !open) break;
        open.to = Math.min(utterance.written, event.toSample - utterance.fromSample);
        open.speechTo = event.speechToSample - utterance.fromSample;
        // It ended on silence: all it heard after its speech was quiet.
        open.quietTo = utterance.written;
        utterance.speechTo = event.speechToSample;
        utterance.ended = true;
        if (utterance.fd !== null) closeSync(utterance.fd);
        utterance.fd = null;
        this.settleFromPartial(utterance);
        break;
      }
    }
    this.pump();
  }

  /** Resolves once every utterance so far has had its final (or the recognizer gave up). */
  settled(): Promise<void> {
    if (this.utterances.length === 0 || this.gaveUp) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Stops decoding: every utterance still open gets its final from what is known (its settled
   * pieces, or its last partial if that said more). For a decoder that keeps failing, or a stop
   * that cannot wait any longer.
   */
  abandon(why: string): void {
    if (this.gaveUp) return;
    this.gaveUp = true;
    this.opts.log.warn(
      { why, unsettled: this.utterances.length },
      "live transcript: settling from what is known",
    );
    for (const utterance of this.utterances.splice(0)) {
      const settledText = this.settledText(utterance);
      const lastPartial = this.opts.reports.lastText(utterance.key);
      this.finalize(utterance, settledText.length >= lastPartial.length ? settledText : lastPartial);
    }
    this.wake();
  }

  private pump(): void {
    if (this.busy || this.gaveUp) return;
    // A new utterance's first partial goes before settling the last one (a short decode: the
    // final waits a moment, the new speech shows at once); later partials come after.
    const job = this.nextPartial(true) ?? this.nextSettle() ?? this.nextPartial(false);
    if (!job) return;
    this.busy = true;
    const { utterance } = job;
    const piece = job.kind === "settle" ? job.piece : (utterance.pieces.at(-1) as Piece);
    const to = job.kind === "settle" ? (piece.to as number) : utterance.written;
    const started = this.now();
    this.opts.decoder
      .decode(
        path.basename(utterance.file, ".raw"),
        piece.from / SAMPLES_PER_DECODER_FRAME,
        Math.floor(to / SAMPLES_PER_DECODER_FRAME),
      )
      .then(
        (text) => {
          const tookMs = this.now() - started;
          this.failures = 0;
          this.opts.log.debug(
            {
              decode: job.kind === "partial" ? job.why : job.kind,
              audioMs: Math.round(((to - piece.from) / SAMPLE_RATE) * 1000),
              tookMs: Math.round(tookMs),
            },
            "live transcript: decoded",
          );
          if (job.kind === "settle") {
            piece.text = text;
            this.finishIfSettled(utterance);
            return;
          }
          this.partialAllowedAt = this.now() + tookMs * (1 / PARTIAL_SHARE - 1);
          utterance.partialTo = to;
          utterance.lastPartial = { piece, to, text };
          // The words before this piece (all settled when it started), taken before this decode
          // may settle the piece itself.
          const before = this.settledText(utterance);
          // Its piece may have closed meanwhile (this settles it), or the utterance ended (this
          // may be its final).
          this.settleFromPartial(utterance);
          if (utterance.ended) return;
          this.opts.reports.partial(utterance.key, {
            text: joinWords(before, text),
            startMs: this.opts.toRecordingMs(utterance.speechFrom),
            endMs: this.opts.toRecordingMs(utterance.fromSample + to),
          });
        },
        (error: Error) => {
          this.failures += 1;
          this.opts.log.warn(
            { err: error.message, failures: this.failures },
            "live transcript: decode failed",
          );
          // A failed partial is not tried again as such: the next one covers more anyway.
          if (job.kind === "partial") utterance.partialTo = to;
          if (this.failures >= MAX_FAILURES) {
            this.abandon(error.message);
            this.opts.onGiveUp(`pocketsphinx failed ${MAX_FAILURES} times in a row: ${error.message}`);
          }
        },
      )
      .finally(() => {
        this.busy = false;
        this.pump();
      });
  }

  /** The oldest piece closed but not yet decoded for good; short ones settle empty on the spot. */
  private nextSettle(): Job | null {
    for (const utterance of this.utterances) {
      for (const piece of utterance.pieces) {
        if (piece.to === null || piece.text !== null) continue;
        if (piece.to - piece.from < MIN_PIECE_SAMPLES) {
          piece.text = "";
          if (this.finishIfSettled(utterance)) return this.nextSettle();
          continue;
        }
        return { kind: "settle", utterance, piece };
      }
    }
    return null;
  }

  /**
   * The newest utterance's partial, while it grows: its `first` (after FIRST_PARTIAL of speech,
   * whatever the budget), or a later one once it has PARTIAL_STEP of new audio and the budget
   * allows; and at once when the speech pauses, since that decode is the final if the utterance
   * ends there (settleFromPartial), which saves more than it costs. Closed pieces are settled
   * first: a partial builds on their words.
   */
  private nextPartial(first: boolean): Job | null {
    const utterance = this.utterances.at(-1);
    if (!utterance || utterance.ended || (utterance.partialTo === 0) !== first) return null;
    if (utterance.pieces.some((piece) => piece.to !== null && piece.text === null)) return null;
    const paused = utterance.pausedAt > utterance.partialTo;
    const grown = first
      ? utterance.fromSample + utterance.written - utterance.speechFrom >= FIRST_PARTIAL_SAMPLES
      : utterance.written - utterance.partialTo >= PARTIAL_STEP_SAMPLES &&
        this.now() >= this.partialAllowedAt;
    if (!paused && !grown) return null;
    return { kind: "partial", utterance, why: paused ? "pause" : first ? "first" : "grown" };
  }

  /**
   * Settles a closed piece from its last partial when that heard all of its speech
   * (REUSE_MARGIN); reports the final if that was the utterance's last unsettled piece.
   */
  private settleFromPartial(utterance: Utterance): void {
    const last = utterance.lastPartial;
    const piece = last?.piece;
    if (!last || !piece || piece.text !== null || piece.speechTo === null || piece.quietTo === null) return;
    if (last.to < piece.speechTo + REUSE_MARGIN_SAMPLES || last.to > piece.quietTo) return;
    piece.text = last.text;
    this.finishIfSettled(utterance);
  }

  /** Reports the final once an ended utterance has all its pieces settled; says whether it did. */
  private finishIfSettled(utterance: Utterance): boolean {
    if (!utterance.ended || utterance.pieces.some((piece) => piece.text === null)) return false;
    this.utterances.splice(this.utterances.indexOf(utterance), 1);
    this.finalize(utterance, this.settledText(utterance));
    if (this.utterances.length === 0) this.wake();
    return true;
  }

  private finalize(utterance: Utterance, text: string): void {
    if (utterance.fd !== null) closeSync(utterance.fd);
    utterance.fd = null;
    rmSync(utterance.file, { force: true });
    this.opts.reports.final(utterance.key, {
      text,
      startMs: this.opts.toRecordingMs(utterance.speechFrom),
      endMs: this.opts.toRecordingMs(utterance.speechTo ?? utterance.fromSample + utterance.written),
    });
  }

  private settledText(utterance: Utterance): string {
    return joinWords(...utterance.pieces.map((piece) => piece.text ?? ""));
  }

  private find(key: number): Utterance | undefined {
    return this.utterances.find((utterance) => utterance.key === key);
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private now(): number {
    return this.opts.now?.() ?? performance.now();
  }
}

function joinWords(...parts: string[]): string {
  return parts.filter(Boolean).join(" ");
}
