import { Readable } from "node:stream";
import { HEAD_BYTES, mp4Head } from "../../media/untrusted-input.js";
import { ValidationError } from "../errors.js";

/**
 * A runner's upload, refused (422) unless its first bytes open an MP4 the way `part` must: a
 * `ftyp` box for a whole recording or segment 0, a fragment's box (`moof`, `mdat`, `mfra`) for a
 * later segment. Checked before anything is stored, so a playlist or manifest dressed as an MP4
 * never reaches the disk, let alone ffmpeg (media/untrusted-input.ts). Resolves with a stream of
 * the whole upload, the first bytes included; nothing beyond them is read here.
 */
export async function checkedMp4Upload(source: Readable, part: "start" | "continuation"): Promise<Readable> {
  const chunks = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headBytes = 0;
  while (headBytes < HEAD_BYTES) {
    const next = (await chunks.next()) as IteratorResult<Buffer>;
    if (next.done) break;
    head.push(next.value);
    headBytes += next.value.length;
  }
  const first = Buffer.concat(head);
  if (!mp4Head(first, part)) {
    const expected = part === "start" ? "an MP4 ftyp box" : "an MP4 fragment box (moof, mdat or mfra)";
    throw new ValidationError([
      { loc: ["body"], msg: `Upload must start with ${expected}`, type: "value_error" },
    ]);
  }
  return Readable.from(
    (async function* () {
      yield first;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value as Buffer;
    })(),
    { objectMode: false },
  );
}
