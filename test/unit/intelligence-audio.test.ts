import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wavDataBytes } from "../../src/intelligence/audio.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "meetbot-wav-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function chunk(id: string, body: Buffer, declared = body.length): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, "ascii");
  header.writeUInt32LE(declared, 4);
  return Buffer.concat([header, body, body.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

async function wav(name: string, ...chunks: Buffer[]): Promise<string> {
  const body = Buffer.concat([Buffer.from("WAVE"), ...chunks]);
  const riff = Buffer.alloc(8);
  riff.write("RIFF", 0, "ascii");
  riff.writeUInt32LE(body.length, 4);
  const file = path.join(dir, name);
  await writeFile(file, Buffer.concat([riff, body]));
  return file;
}

const fmt = chunk("fmt ", Buffer.alloc(16));

describe("wavDataBytes", () => {
  it("reads the data chunk's size after the format chunk", async () => {
    expect(await wavDataBytes(await wav("plain.wav", fmt, chunk("data", Buffer.alloc(32_000))))).toBe(32_000);
  });

  it("skips other chunks, odd-sized ones padded", async () => {
    const list = chunk("LIST", Buffer.alloc(27));
    expect(await wavDataBytes(await wav("list.wav", fmt, list, chunk("data", Buffer.alloc(640))))).toBe(640);
  });

  it("takes the rest of the file when the size was never written back (0 or 0xFFFFFFFF)", async () => {
    expect(await wavDataBytes(await wav("zero.wav", fmt, chunk("data", Buffer.alloc(100), 0)))).toBe(100);
    expect(await wavDataBytes(await wav("max.wav", fmt, chunk("data", Buffer.alloc(100), 0xffffffff)))).toBe(
      100,
    );
  });

  it("never counts past the end of a truncated file", async () => {
    expect(await wavDataBytes(await wav("cut.wav", fmt, chunk("data", Buffer.alloc(100), 5000)))).toBe(100);
  });

  it("is 0 without a data chunk", async () => {
    expect(await wavDataBytes(await wav("empty.wav", fmt))).toBe(0);
  });

  it("refuses a file that is not a WAV", async () => {
    const file = path.join(dir, "not.wav");
    await writeFile(file, "ID3 this is an mp3, really");
    await expect(wavDataBytes(file)).rejects.toMatchObject({ code: "media_unreadable" });
  });
});
