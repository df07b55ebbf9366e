/**
 * The HTTP shapes of /v1, as zod, one file per route group: route files validate and serialize with
 * them, services take and return their inferred types, and @fastify/swagger turns them into OpenAPI.
 * Everything a bot runner also needs (MeetingInfo, durations, statuses) comes from src/core.
 */
export * from "./common.js";
export * from "./auth.js";
export * from "./api-keys.js";
export * from "./bots.js";
export * from "./bot-accounts.js";
export * from "./events.js";
export * from "./callbacks.js";
export * from "./commands.js";
export * from "./live.js";
export * from "./recordings.js";
export * from "./transcripts.js";
export * from "./users.js";
export * from "./webhooks.js";
export * from "./content-jobs.js";
export * from "./voice.js";
export * from "./picture.js";
export * from "./calendars.js";
