import { type FileHandle, open } from "node:fs/promises";
import type { Readable } from "node:stream";
import { completeBoxes } from "./mp4-boxes.js";

/**
 * Appends a resumed recording's fragmented MP4 (a new ffmpeg's output, read from a pipe) to the
 * file the recording was paused in, as more fragments of the same movie, so that the file stays
 * one growing fMP4: the segment uploader (segment-upload.ts) keeps following it, and a runner
 * lost after a pause still has all but the last interval delivered.
 *
 * Both ffmpegs run with the same arguments, so the new stream opens with the same `moov` (codecs,
 * tracks, time scales); only its `ftyp` and `moov` are dropped (and its closing `mfra`, whose
 * offsets are the pipe's). The MP4 muxer starts every stream at 0, so each fragment's `tfdt`
 * (its first sample's decode time) is moved by `startMs` (where the part belongs on the
 * recording's clock) in its track's time scale, and its `mfhd` sequence number continues the
 * file's. A moof goes to the file together with its mdat, never alone.
 *
 * If the `moov` differs (it should not), nothing is appended: the stream goes whole to `fallback`,
 * a file of its own that the recorder joins at the end as after an ffmpeg restart.
 */
export async function appendFragments(
  stream: Readable,
  target: string,
  startMs: Promise<number>,
  fallback: string,
  /** Called when the stream turns out to be another movie, before it goes to `fallback`. */
  onFallback: () => void,
): Promise<"appended" | "fallback" | "empty"> {
  const head = await readHead(target);
  const targetMoov = head.moov;
  let sequence = head.lastSequence;
  let timescales: Map<number, number> | null = null;
  let file: FileHandle = await open(target, "a");
  let outcome: "appended" | "fallback" | "empty" = "empty";
  let pending: Buffer | null = null;
  let buffered = Buffer.alloc(0);
  let ftyp: Buffer | null = null;
  try {
    for await (const chunk of stream) {
      buffered = Buffer.concat([buffered, chunk as Buffer]);
      for (;;) {
        if (buffered.length < 8) break;
        const size = buffered.readUInt32BE(0);
        if (size < 8 || buffered.length < size) break;
        const box = buffered.subarray(0, size);
        buffered = buffered.subarray(size);
        const type = box.toString("latin1", 4, 8);
        if (outcome === "fallback") {
          await file.write(box);
        } else if (type === "ftyp") {
          ftyp = Buffer.from(box);
        } else if (type === "moov") {
          if (!box.equals(targetMoov)) {
            // Not the same movie: this part goes to a file of its own.
            onFallback();
            await file.close();
            file = await open(fallback, "w");
            outcome = "fallback";
            await file.write(Buffer.concat([ftyp ?? Buffer.alloc(0), box]));
          } else {
            timescales = trackTimescales(box);
          }
        } else if (type === "moof" && timescales) {
          const offsetMs = await startMs;
          pending = shiftFragment(Buffer.from(box), timescales, offsetMs, ++sequence);
        } else if (type === "mdat" && pending) {
          await file.write(Buffer.concat([pending, box]));
          pending = null;
          outcome = "appended";
        }
        // Anything else (the closing mfra, a free box) has no place in the joined file.
      }
    }
  } finally {
    await file.close();
  }
  return outcome;
}

interface Box {
  type: string;
  bytes: Buffer;
}

/**
 * The file's moov and its last moof's sequence number (0 if none), from its box headers: the
 * file may be hours long, so only the moov and the last moof are read.
 */
async function readHead(path: string): Promise<{ moov: Buffer; lastSequence: number }> {
  const file = await open(path, "r");
  try {
    const read = async (position: number, length: number) => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await file.read(buffer, 0, length, position);
      return buffer.subarray(0, bytesRead);
    };
    const boxes = await completeBoxes(read, 0, (await file.stat()).size);
    const moovBox = boxes.find((box) => box.type === "moov");
    if (!moovBox) throw new Error(`no moov in ${path}`);
    const lastMoof = boxes.findLast((box) => box.type === "moof");
    let lastSequence = 0;
    if (lastMoof) {
      const moof = await read(lastMoof.start, lastMoof.end - lastMoof.start);
      const mfhd = children(moof, 8, moof.length).find((b) => b.type === "mfhd");
      if (mfhd) lastSequence = mfhd.bytes.readUInt32BE(12);
    }
    return { moov: await read(moovBox.start, moovBox.end - moovBox.start), lastSequence };
  } finally {
    await file.close();
  }
}

/** The boxes inside `bytes` from `start` to `end` (a container's payload). */
function children(bytes: Buffer, start: number, end: number): Box[] {
  const boxes: Box[] = [];
  let at = start;
  while (at + 8 <= end) {
    const size = bytes.readUInt32BE(at);
    if (size < 8 || at + size > end) break;
    boxes.push({ type: bytes.toString("latin1", at + 4, at + 8), bytes: bytes.subarray(at, at + size) });
    at += size;
  }
  return boxes;
}

/** Each track's id and time scale (moov > trak > tkhd, mdia > mdhd). */
function trackTimescales(moov: Buffer): Map<number, number> {
  const scales = new Map<number, number>();
  for (const trak of children(moov, 8, moov.length).filter((b) => b.type === "trak")) {
    const parts = children(trak.bytes, 8, trak.bytes.length);
    const tkhd = parts.find((b) => b.type === "tkhd");
    const mdia = parts.find((b) => b.type === "mdia");
    const mdhd = mdia && children(mdia.bytes, 8, mdia.bytes.length).find((b) => b.type === "mdhd");
    if (!tkhd || !mdhd) continue;
    // Version 1 boxes carry 64-bit times before the id / the time scale.
    const trackId = tkhd.bytes.readUInt32BE(tkhd.bytes[8] === 1 ? 28 : 20);
    const timescale = mdhd.bytes.readUInt32BE(mdhd.bytes[8] === 1 ? 28 : 20);
    scales.set(trackId, timescale);
  }
  return scales;
}

/** The moof with every traf's tfdt moved by `offsetMs` and its mfhd numbered `sequence` (in place). */
function shiftFragment(moof: Buffer, timescales: Map<number, number>, offsetMs: number, sequence: number) {
  for (const box of children(moof, 8, moof.length)) {
    if (box.type === "mfhd") box.bytes.writeUInt32BE(sequence, 12);
    if (box.type !== "traf") continue;
    const parts = children(box.bytes, 8, box.bytes.length);
    const tfhd = parts.find((b) => b.type === "tfhd");
    const tfdt = parts.find((b) => b.type === "tfdt");
    if (!tfhd || !tfdt) continue;
    const timescale = timescales.get(tfhd.bytes.readUInt32BE(12)) ?? 1000;
    const offset = BigInt(Math.round((offsetMs / 1000) * timescale));
    if (tfdt.bytes[8] === 1) tfdt.bytes.writeBigUInt64BE(tfdt.bytes.readBigUInt64BE(12) + offset, 12);
    else tfdt.bytes.writeUInt32BE(Number(BigInt(tfdt.bytes.readUInt32BE(12)) + offset), 12);
  }
  return moof;
}
