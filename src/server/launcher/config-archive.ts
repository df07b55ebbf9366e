/**
 * A tar archive of one folder holding one file, for the Docker Engine's "copy into a container"
 * (PUT /containers/{id}/archive): how a runner container gets its BotConfig as a file before it
 * starts. The folder and the file belong to `uid` and are readable by it alone (0700, 0400).
 *
 * ustar, written by hand: a header block per entry, the file's bytes padded to the 512-byte
 * block, and two empty blocks to end it. A dependency for 40 lines of a fixed format is not worth
 * its weight.
 */
const BLOCK = 512;

export function configArchive(folder: string, file: string, content: string, uid: number): Buffer {
  const data = Buffer.from(content, "utf8");
  const mtime = Math.floor(Date.now() / 1000);
  const padding = Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK);
  return Buffer.concat([
    header(`${folder}/`, { mode: 0o700, uid, size: 0, mtime, type: "5" }),
    header(`${folder}/${file}`, { mode: 0o400, uid, size: data.length, mtime, type: "0" }),
    data,
    padding,
    Buffer.alloc(2 * BLOCK),
  ]);
}

interface Entry {
  mode: number;
  uid: number;
  size: number;
  mtime: number;
  /** "0" a file, "5" a folder. */
  type: "0" | "5";
}

function header(name: string, entry: Entry): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`);
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, "utf8");
  octal(block, 100, 8, entry.mode);
  octal(block, 108, 8, entry.uid);
  octal(block, 116, 8, entry.uid); // its group: the image's user's own
  octal(block, 124, 12, entry.size);
  octal(block, 136, 12, entry.mtime);
  block.write(entry.type, 156, 1, "latin1");
  block.write("ustar\u000000", 257, 8, "latin1");
  // The checksum is the sum of the header's bytes with its own field read as spaces.
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, 8, "latin1");
  return block;
}

/** A number as zero-padded octal digits ending in NUL, filling `length` bytes at `offset`. */
function octal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, "0")}\u0000`, offset, length, "latin1");
}
