/**
 * Where speech starts and ends in the call's sound, found by its level as it streams in:
 * the utterances a recognizer decodes, and within long ones the pieces it decodes separately.
 *
 * Input: 16 kHz mono signed 16-bit little-endian PCM, in chunks of any size. Positions are sample
 * numbers counted from the stream's first sample. Work is done in 20 ms frames: a frame is speech
 * when its RMS level is well above the noise floor (tracked as the quietest recent level, rising
 * slowly) and above an absolute minimum.
 *
 * - An utterance starts after START_FRAMES speech frames in a row; its audio begins PREROLL
 *   earlier, so the recognizer hears the onset the level only caught late.
 * - It ends after END_SILENCE of non-speech, its audio reaching POSTROLL past the last speech.
 *   (The mock meetings leave 800 ms between lines; people pause within a sentence for less.)
 * - When the platform's indicator shows someone else starting to speak, the open utterance ends
 *   at its next short pause (TURN_PAUSE) instead: people leave less than END_SILENCE between
 *   turns, and one utterance should have one speaker.
 * - A pause of PAUSE inside an utterance is told (`pause`): the speech may be over, and a decode
 *   now may serve as its final.
 * - A long utterance is cut into pieces the recognizer settles one by one (so it never re-decodes
 *   more than one piece for a partial): where the speech goes on after a pause (PAUSE at least)
 *   once the piece is PIECE_MIN long, or at its quietest frame of the last second once it is
 *   PIECE_MAX long. After UTTERANCE_MAX a pause ends the utterance, so a monologue still settles
 *   now and then.
 */

export const SAMPLE_RATE = 16_000;
export const FRAME_SAMPLES = 320;
const FRAME_BYTES = FRAME_SAMPLES * 2;
const FRAMES_PER_SECOND = SAMPLE_RATE / FRAME_SAMPLES;
const ms = (milliseconds: number) => Math.round((milliseconds / 1000) * FRAMES_PER_SECOND);

const START_FRAMES = 3;
const PREROLL_FRAMES = ms(300);
const END_SILENCE_FRAMES = ms(600);
const POSTROLL_FRAMES = ms(200);
const TURN_PAUSE_FRAMES = ms(120);
/** A speaker change this soon after an utterance's speech began is most likely its own speaker's indicator, late. */
const TURN_LAG_FRAMES = ms(1_000);
const PAUSE_FRAMES = ms(200);
const PIECE_MIN_FRAMES = ms(1_000);
const PIECE_MAX_FRAMES = ms(6_000);
const CUT_SEARCH_FRAMES = ms(1_000);
const UTTERANCE_MAX_FRAMES = ms(30_000);

/** Speech is at least this far above the noise floor, in dB... */
const ABOVE_FLOOR_DB = 12;
/** ...and never quieter than this (digital silence would make any murmur speech). */
const MIN_SPEECH_DBFS = -50;
/**
 * The floor follows the level down at once and up by this much per frame (3 dB/s): the quiet
 * between words keeps pulling it down while someone talks, and noise that stays (a fan after
 * someone unmutes) stops counting as speech after a while (from digital silence to a -40 dBFS
 * hiss: 13 s).
 */
const FLOOR_RISE_DB = 3 / FRAMES_PER_SECOND;
/** The floor never goes below this (digital silence is -Infinity). */
const FLOOR_MIN_DBFS = -90;

export type SegmentEvent =
  /** An utterance begins: its audio starts at `fromSample`, its speech at `speechFromSample`. */
  | { type: "start"; utterance: number; fromSample: number; speechFromSample: number }
  /** The utterance's audio, contiguous from its `fromSample`. */
  | { type: "audio"; utterance: number; pcm: Buffer }
  /** The speech paused (PAUSE of silence so far) with the audio sent up to `atSample`. */
  | { type: "pause"; utterance: number; atSample: number }
  /**
   * A piece of the utterance ends at `atSample` and the next begins there; the piece's speech
   * ended at `speechToSample` and the next one's starts at `nextSpeechFromSample` (the audio in
   * between is silence). Audio past `nextSpeechFromSample` is sent after this event.
   */
  | {
      type: "cut";
      utterance: number;
      atSample: number;
      speechToSample: number;
      nextSpeechFromSample: number;
    }
  /** The utterance's audio ends at `toSample` (audio already sent may go past it); its speech at `speechToSample`. */
  | { type: "end"; utterance: number; toSample: number; speechToSample: number };

interface Open {
  utterance: number;
  fromFrame: number;
  speechFromFrame: number;
  /** Someone else started speaking: end at the next short pause. */
  endAtPause: boolean;
  pieceFromFrame: number;
  lastSpeechFrame: number;
  silentRun: number;
  /** The levels of the current piece's frames from `levelsFromFrame` on. */
  levels: number[];
  levelsFromFrame: number;
}

export class SpeechSegmenter {
  private remainder = Buffer.alloc(0);
  private frame = 0;
  /** The noise floor in dBFS; null before the first frame, which sets it. */
  private floor: number | null = null;
  private nextUtterance = 1;
  /** The last frames heard while no utterance was open: the next one's preroll. */
  private recent: Buffer[] = [];
  private speechRun = 0;
  private open: Open | null = null;

  constructor(private readonly emit: (event: SegmentEvent) => void) {}

  /** The sample number just after everything pushed so far (whole frames only). */
  get position(): number {
    return this.frame * FRAME_SAMPLES;
  }

  push(chunk: Buffer): void {
    let data = this.remainder.length > 0 ? Buffer.concat([this.remainder, chunk]) : chunk;
    while (data.length >= FRAME_BYTES) {
      this.onFrame(data.subarray(0, FRAME_BYTES));
      data = data.subarray(FRAME_BYTES);
    }
    // Copied: the caller may reuse its buffer.
    this.remainder = Buffer.from(data);
  }

  /**
   * Someone else started speaking, by the platform's indicator: the open utterance ends at its
   * next short pause, or now if it is in one.
   */
  speakerChanged(): void {
    const open = this.open;
    if (!open || this.frame - open.speechFromFrame < TURN_LAG_FRAMES) return;
    open.endAtPause = true;
    if (open.silentRun >= TURN_PAUSE_FRAMES) {
      this.end(open, Math.min(this.frame, open.lastSpeechFrame + 1 + POSTROLL_FRAMES));
    }
  }

  /** The stream has ended: an open utterance ends where the sound stopped. */
  flush(): void {
    const open = this.open;
    if (!open) return;
    this.end(open, Math.min(this.frame, open.lastSpeechFrame + 1 + POSTROLL_FRAMES));
  }

  private onFrame(pcm: Buffer): void {
    const level = levelDbfs(pcm);
    const floor = Math.max(FLOOR_MIN_DBFS, Math.min(level, (this.floor ?? level) + FLOOR_RISE_DB));
    this.floor = floor;
    const speech = level > Math.max(floor + ABOVE_FLOOR_DB, MIN_SPEECH_DBFS);
    const frame = this.frame;
    this.frame += 1;
    const open = this.open;
    if (open) return this.inUtterance(open, frame, pcm, level, speech);

    // Copied: `pcm` is a view of a buffer reused for the next chunk.
    this.recent.push(Buffer.from(pcm));
    if (this.recent.length > PREROLL_FRAMES + START_FRAMES) this.recent.shift();
    this.speechRun = speech ? this.speechRun + 1 : 0;
    if (this.speechRun >= START_FRAMES) this.begin(frame - START_FRAMES + 1);
  }

  private begin(speechFromFrame: number): void {
    const preroll = this.recent;
    const fromFrame = this.frame - preroll.length;
    const open: Open = {
      utterance: this.nextUtterance++,
      fromFrame,
      speechFromFrame,
      endAtPause: false,
      pieceFromFrame: fromFrame,
      lastSpeechFrame: this.frame - 1,
      silentRun: 0,
      levels: [],
      levelsFromFrame: this.frame,
    };
    this.open = open;
    this.speechRun = 0;
    this.recent = [];
    this.emit({
      type: "start",
      utterance: open.utterance,
      fromSample: fromFrame * FRAME_SAMPLES,
      speechFromSample: speechFromFrame * FRAME_SAMPLES,
    });
    if (preroll.length > 0)
      this.emit({ type: "audio", utterance: open.utterance, pcm: Buffer.concat(preroll) });
  }

  private inUtterance(open: Open, frame: number, pcm: Buffer, level: number, speech: boolean): void {
    if (speech) {
      // Speech again after a pause: a long enough piece ends in the pause's middle (both keep a
      // little of it). Only now, so that the pause before the end of an utterance cuts nothing;
      // and before this frame's audio goes out, so that all the piece's audio was heard by then.
      const pauseFrom = open.lastSpeechFrame + 1;
      if (open.silentRun >= PAUSE_FRAMES && pauseFrom - open.pieceFromFrame >= PIECE_MIN_FRAMES) {
        this.cut(open, pauseFrom + Math.floor(open.silentRun / 2), pauseFrom, frame);
      }
    }
    this.emit({ type: "audio", utterance: open.utterance, pcm: Buffer.from(pcm) });
    open.levels.push(level);
    if (open.levels.length > CUT_SEARCH_FRAMES) {
      open.levels.shift();
      open.levelsFromFrame += 1;
    }
    if (speech) {
      open.lastSpeechFrame = frame;
      open.silentRun = 0;
      if (frame + 1 - open.pieceFromFrame >= PIECE_MAX_FRAMES) {
        const at = open.levelsFromFrame + open.levels.indexOf(Math.min(...open.levels));
        this.cut(open, at, at, at);
      }
      return;
    }
    open.silentRun += 1;
    if (open.silentRun >= (open.endAtPause ? TURN_PAUSE_FRAMES : END_SILENCE_FRAMES)) {
      this.end(open, Math.min(frame + 1, open.lastSpeechFrame + 1 + POSTROLL_FRAMES));
    } else if (open.silentRun === PAUSE_FRAMES) {
      // A monologue past UTTERANCE_MAX settles at its first pause.
      if (frame + 1 - open.fromFrame >= UTTERANCE_MAX_FRAMES) this.end(open, frame + 1);
      else this.emit({ type: "pause", utterance: open.utterance, atSample: (frame + 1) * FRAME_SAMPLES });
    }
  }

  /**
   * The piece ends at `atFrame` (its speech at `speechToFrame`) and the next begins there (its
   * speech at `nextSpeechFromFrame`).
   */
  private cut(open: Open, atFrame: number, speechToFrame: number, nextSpeechFromFrame: number): void {
    open.pieceFromFrame = atFrame;
    open.levels = [];
    open.levelsFromFrame = this.frame;
    this.emit({
      type: "cut",
      utterance: open.utterance,
      atSample: atFrame * FRAME_SAMPLES,
      speechToSample: speechToFrame * FRAME_SAMPLES,
      nextSpeechFromSample: nextSpeechFromFrame * FRAME_SAMPLES,
    });
  }

  private end(open: Open, toFrame: number): void {
    this.open = null;
    this.speechRun = 0;
    this.emit({
      type: "end",
      utterance: open.utterance,
      toSample: toFrame * FRAME_SAMPLES,
      speechToSample: (open.lastSpeechFrame + 1) * FRAME_SAMPLES,
    });
  }
}

/** The RMS level of 16-bit samples in dBFS (-Infinity for digital silence). */
export function levelDbfs(pcm: Buffer): number {
  let sum = 0;
  const samples = pcm.length >> 1;
  for (let i = 0; i < samples; i++) {
    const sample = pcm.readInt16LE(i * 2);
    sum += sample * sample;
  }
  if (sum === 0) return -Infinity;
  return 10 * Math.log10(sum / samples / (32768 * 32768));
}
