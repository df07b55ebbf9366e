import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

/**
 * Streams `source` into `final` through a `<final>.<random>.part` file renamed at the end, so a reader never sees
 * half a file and an interrupted upload leaves nothing behind. Never buffers the whole body;
 * past `maxBytes` it stops and rejects with `tooLarge()`.
 */
export async function writeStreamAtomically(
  source: Readable,
  final: string,
  maxBytes: number,
  tooLarge: () => Error,
): Promise<{ sizeBytes: number }> {
  await mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
  // A name of its own per upload: two uploads of one file at once each finish whole, the last wins.
  const part = `${final}.${randomBytes(6).toString("hex")}.part`;
  let sizeBytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      sizeBytes += chunk.length;
      if (sizeBytes > maxBytes) callback(tooLarge());
      else callback(null, chunk);
    },
  });
  try {
    await pipeline(source, counter, createWriteStream(part, { mode: 0o600 }));
    await rename(part, final);
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  }
  return { sizeBytes };
}
