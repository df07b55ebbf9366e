import { z } from "zod";
import { Timestamp } from "./common.js";

export const CreateApiKeyBody = z.object({
  name: z.string().trim().min(1).max(200),
  /** Without it (or null) the key never expires; must be in the future. Any UTC offset is accepted. */
  expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
});
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

/** An API key as listed: never the key itself. */
export const ApiKey = z.object({
  id: z.number().int(),
  name: z.string(),
  keyPreview: z.string().describe('"mbk_" + first 6 hex characters + "..." + last 4'),
  createdAt: Timestamp,
  lastUsedAt: Timestamp.nullable(),
  expiresAt: Timestamp.nullable(),
  isRevoked: z.boolean(),
});
export type ApiKey = z.infer<typeof ApiKey>;

/** The creation response: the only time the full key is shown. */
export const CreatedApiKey = ApiKey.omit({ lastUsedAt: true }).extend({
  key: z.string().describe('"mbk_" + 64 hexadecimal characters; shown only here'),
});
export type CreatedApiKey = z.infer<typeof CreatedApiKey>;

export const ApiKeyList = z.object({ apiKeys: z.array(ApiKey), total: z.number().int() });
export type ApiKeyList = z.infer<typeof ApiKeyList>;
