/**
 * The JSON answer of each operation of the meeting-notes interface, by method and documented path
 * (as src/server/schemas/responses.ts is for the bot API; the same test holds it to the routes).
 */
import type { ResponseMap } from "../server/schemas/responses.js";
import { Summary, Transcript } from "../server/schemas/index.js";
import { Meeting, MeetingList } from "./schemas.js";
import { CreatedNotesWebhook, NotesWebhook, NotesWebhookList } from "./webhooks.js";

export const NOTES_API_RESPONSES = {
  "GET /v1/meetings": MeetingList,
  "GET /v1/meetings/{id}": Meeting,
  "GET /v1/meetings/{id}/transcript": Transcript,
  "GET /v1/meetings/{id}/summary": Summary,
  "POST /v1/webhooks": CreatedNotesWebhook,
  "GET /v1/webhooks": NotesWebhookList,
  "GET /v1/webhooks/{id}": NotesWebhook,
} as const satisfies ResponseMap;

export type NotesApiResponses = typeof NOTES_API_RESPONSES;
