import type { Kysely } from "kysely";
import type { AudioStreamOptions, BotConfigInput } from "../../core/index.js";
import type { Sealed, SecretBox } from "../auth/secret-box.js";
import { parseJson } from "../db/database.js";
import type { BotRow, Database } from "../db/schema.js";
import { StartupError } from "../startup-error.js";
import { ValidationError } from "../errors.js";
import type { BotAudioStream } from "../schemas/index.js";
import { checkTargetUrl, type OutboundPolicy } from "../webhooks/outbound.js";

/**
 * A bot's audio stream (bot option `audioStream`, core AudioStreamOptions) at rest: the URL and
 * rate as JSON in `audio_stream`, the token sealed with the operator's MEETBOT_SECRET_KEY (like
 * bot-account sessions, auth/secret-box.ts) in `audio_stream_token`. Answers show `hasToken`,
 * never the token; it leaves the server only in the runner's BotConfig.
 */
interface StoredAudioStream {
  url: string;
  sampleRate: AudioStreamOptions["sampleRate"];
}

const tokenAdditionalData = (userId: number) => `meetbot audio-stream token; user ${userId}`;

/**
 * The create/PATCH checks: the URL under the webhooks' address rule (a ws URL is judged as the
 * http URL of the same host), and a token only where it can be stored encrypted. A 422 otherwise.
 */
export function checkAudioStream(
  options: AudioStreamOptions | null | undefined,
  policy: Pick<OutboundPolicy, "allowPrivateTargets">,
  box: SecretBox,
): void {
  if (!options) return;
  const problem = checkTargetUrl(options.url.replace(/^ws/i, "http"), policy);
  if (problem)
    throw new ValidationError([{ loc: ["body", "audioStream", "url"], msg: problem, type: "value_error" }]);
  if (options.token !== undefined && !box.configured)
    throw new ValidationError([
      {
        loc: ["body", "audioStream", "token"],
        msg: "a token is stored encrypted, and the operator has not set MEETBOT_SECRET_KEY: use a URL without one",
        type: "value_error",
      },
    ]);
}

/** The two columns for `options` (null: no audio stream). */
export function audioStreamColumns(
  options: AudioStreamOptions | null,
  userId: number,
  box: SecretBox,
): Pick<BotRow, "audio_stream" | "audio_stream_token"> {
  if (!options) return { audio_stream: null, audio_stream_token: null };
  const stored: StoredAudioStream = { url: options.url, sampleRate: options.sampleRate };
  return {
    audio_stream: JSON.stringify(stored),
    audio_stream_token:
      options.token === undefined
        ? null
        : JSON.stringify(box.seal(options.token, tokenAdditionalData(userId))),
  };
}

/** How answers show it: never the token. */
export function audioStreamOf(row: BotRow): BotAudioStream | null {
  const stored = parseJson<StoredAudioStream>(row.audio_stream);
  if (!stored) return null;
  return { url: stored.url, sampleRate: stored.sampleRate, hasToken: row.audio_stream_token !== null };
}

/** The runner's BotConfig part, with the token opened and the server's address rule. */
export function runnerAudioStream(
  row: BotRow,
  policy: Pick<OutboundPolicy, "allowPrivateTargets">,
  box: SecretBox,
): Pick<BotConfigInput, "audioStream"> {
  const stored = parseJson<StoredAudioStream>(row.audio_stream);
  if (!stored) return {};
  const sealed = parseJson<Sealed>(row.audio_stream_token);
  return {
    audioStream: {
      ...stored,
      ...(sealed ? { token: box.open(sealed, tokenAdditionalData(row.user_id)) } : {}),
      allowPrivateTargets: policy.allowPrivateTargets,
    },
  };
}

/**
 * At startup, beside the bot-account sessions (bot-accounts.ts prepareSessionKeys) and by the same
 * rules: refuses to run when tokens are stored and MEETBOT_SECRET_KEY lacks the key they were
 * sealed with, then rewrites every token sealed with another key under the first one, so that
 * an old key can go once every server has started with the new one first. Returns how many
 * were rewritten.
 */
export async function prepareAudioStreamTokens(db: Kysely<Database>, box: SecretBox): Promise<number> {
  const rows = await db
    .selectFrom("bots")
    .select(["id", "user_id", "audio_stream_token"])
    .where("audio_stream_token", "is not", null)
    .execute();
  if (rows.length === 0) return 0;
  if (!box.configured)
    throw new StartupError(
      `MEETBOT_SECRET_KEY is not set, but ${rows.length} bot audio-stream token(s) are stored encrypted: set the key they were stored with`,
    );
  let resealed = 0;
  for (const row of rows) {
    const stored = row.audio_stream_token as string;
    const sealed = parseJson<Sealed>(stored);
    if (sealed.keyId === box.currentKeyId) continue;
    if (!box.has(sealed.keyId))
      throw new StartupError(
        `MEETBOT_SECRET_KEY has no key with id "${sealed.keyId}", which bot ${row.id}'s audio-stream token is encrypted with: add it as <id>:<base64>`,
      );
    const aad = tokenAdditionalData(row.user_id);
    let token: string;
    try {
      token = box.open(sealed, aad);
    } catch (err) {
      throw new StartupError(`bot ${row.id}'s audio-stream token: ${(err as Error).message}`);
    }
    // Only if no other process changed it meanwhile.
    const result = await db
      .updateTable("bots")
      .set({ audio_stream_token: JSON.stringify(box.seal(token, aad)) })
      .where("id", "=", row.id)
      .where("audio_stream_token", "=", stored)
      .executeTakeFirst();
    resealed += Number(result.numUpdatedRows);
  }
  return resealed;
}
