/** A top-level ISO BMFF box: its four-letter type and where it lies in the file. */
export interface Box {
  type: string;
  start: number;
  end: number;
}

/** Reads `length` bytes at `position` (fewer at the end of the file). */
export type ReadAt = (position: number, length: number) => Promise<Buffer>;

/**
 * The top-level boxes that lie wholly within the first `size` bytes, starting at `from` (which
 * must be a box start). A growing file's last box may still be half written: it is left out.
 */
export async function completeBoxes(read: ReadAt, from: number, size: number): Promise<Box[]> {
  const boxes: Box[] = [];
  let position = from;
  while (position + 8 <= size) {
    const header = await read(position, 16);
    if (header.length < 8) break;
    let length = header.readUInt32BE(0);
    const type = header.toString("latin1", 4, 8);
    if (length === 1) {
      if (header.length < 16) break;
      length = Number(header.readBigUInt64BE(8));
    }
    // 0 means "to the end of the file": only a finished file's last box can say so.
    if (length === 0 || length < 8) break;
    if (position + length > size) break;
    boxes.push({ type, start: position, end: position + length });
    position += length;
  }
  return boxes;
}

/**
 * Where a segment of a fragmented MP4 may end, at most `limit` bytes after `from`: after the last
 * complete box that is not a `moof` (a fragment's header is never split from its `mdat`). Null
 * when no box is complete yet. A single box bigger than `limit` is still taken whole.
 */
export function segmentEnd(boxes: Box[], from: number, limit: number): number | null {
  let end: number | null = null;
  for (const box of boxes) {
    if (box.type === "moof") continue;
    if (end !== null && box.end - from > limit) break;
    end = box.end;
  }
  return end;
}
