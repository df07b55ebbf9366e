import type { Readable } from "node:stream";
import { BadRequestError, NotFoundError, PayloadTooLargeError } from "../errors.js";
import { ArtifactTooLargeError, type ArtifactStore, MAX_ARTIFACT_BYTES } from "../storage/artifacts.js";
import type { BotService } from "./bots.js";
import type { ServiceContext } from "./context.js";
import { unlessStoreFailed } from "./storage-unavailable.js";

/** Failure artifacts: stored by the bot's runner, read by the bot's owner. */
export class ArtifactService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly store: ArtifactStore,
  ) {}

  async save(botId: number, name: string, source: Readable): Promise<{ name: string; sizeBytes: number }> {
    try {
      const { sizeBytes } = await this.store.save(botId, name, source);
      return { name, sizeBytes };
    } catch (err) {
      if (err instanceof ArtifactTooLargeError) {
        throw new PayloadTooLargeError(`Artifact exceeds ${MAX_ARTIFACT_BYTES} bytes`);
      }
      const failed = unlessStoreFailed(err, "Artifact", this.ctx.log, { botId, name });
      if (failed !== err) throw failed;
      this.ctx.log.warn({ err, botId, name }, "artifact upload failed");
      throw new BadRequestError("Artifact upload was interrupted");
    }
  }

  async open(userId: number, botId: number, name: string): Promise<{ stream: Readable; size: number }> {
    await this.bots.requireOwned(userId, botId);
    const file = await this.store.open(botId, name).catch((err: unknown) => {
      throw unlessStoreFailed(err, "Artifact", this.ctx.log, { botId, name });
    });
    if (!file) throw new NotFoundError("Artifact not found");
    return file;
  }
}
