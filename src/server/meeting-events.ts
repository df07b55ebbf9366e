import type { Transaction } from "kysely";
import type { ActionItem } from "../intelligence/types.js";
import type { Database } from "./db/schema.js";

/**
 * The meeting-notes interface's webhook events, queued by what stores their news (the recording
 * upload, the transcript and summary jobs) inside the same transaction; each returns how many
 * deliveries it queued. Implemented by src/notes/webhooks.ts NotesEvents.
 */
export interface MeetingEvents {
  recordingStored(trx: Transaction<Database>, botId: number, now: Date): Promise<number>;
  transcriptReady(trx: Transaction<Database>, botId: number, utterances: number, now: Date): Promise<number>;
  actionItemsDetected(
    trx: Transaction<Database>,
    botId: number,
    actionItems: readonly ActionItem[],
    now: Date,
  ): Promise<number>;
}
