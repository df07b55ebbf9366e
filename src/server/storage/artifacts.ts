import { createReadStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { writeStreamAtomically } from "./files.js";

/** What a runner keeps when a bot fails: a screenshot, the page's HTML, a Playwright trace. */
export const ARTIFACT_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const MAX_ARTIFACT_BYTES = 64 * 1024 ** 2;

export class ArtifactTooLargeError extends Error {}

/** Where failure artifacts are kept: the data dir, or a bucket (s3-artifacts.ts). */
export interface ArtifactStore {
  /** Streams `source` in (never buffered whole), replacing any earlier artifact of that name. */
  save(botId: number, name: string, source: Readable): Promise<{ sizeBytes: number }>;
  /** Null when there is no such artifact. */
  open(botId: number, name: string): Promise<{ stream: Readable; size: number } | null>;
  /** Deletes all of the bot's artifacts; no error when there are none. */
  removeAll(botId: number): Promise<void>;
}

/** A bot's failure artifacts, under `<dataDir>/bots/<id>/artifacts/`. */
export class LocalArtifactStore implements ArtifactStore {
  constructor(readonly botsDir: string) {}

  file(botId: number, name: string): string {
    if (!ARTIFACT_NAME.test(name)) throw new Error(`bad artifact name ${name}`);
    return path.join(this.botsDir, String(botId), "artifacts", name);
  }

  save(botId: number, name: string, source: Readable): Promise<{ sizeBytes: number }> {
    return writeStreamAtomically(
      source,
      this.file(botId, name),
      MAX_ARTIFACT_BYTES,
      () => new ArtifactTooLargeError(),
    );
  }

  async open(botId: number, name: string): Promise<{ stream: Readable; size: number } | null> {
    const file = this.file(botId, name);
    try {
      const { size } = await stat(file);
      return { stream: createReadStream(file), size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  async removeAll(botId: number): Promise<void> {
    await rm(path.join(this.botsDir, String(botId), "artifacts"), { recursive: true, force: true });
  }
}
