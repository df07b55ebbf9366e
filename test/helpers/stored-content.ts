import type { Db } from "../../src/server/db/database.js";

/** One utterance as a transcript stores it. */
export interface StoredUtterance {
  speaker: { participantId: string; name: string } | null;
  startMs: number;
  endMs: number;
  text: string;
  confidence: number | null;
  words: { text: string; startMs: number; endMs: number; confidence: number }[];
}

/**
 * A completed transcript of a bot's recording (and, given `summary`, a completed summary of it),
 * stored as the job worker stores them: for tests whose recordings no engine could transcribe,
 * or that need no engine to run.
 */
export async function storeCompletedContent(
  db: Db,
  botId: number,
  content: {
    utterances: StoredUtterance[];
    summary?: { overview: string; keyPoints: string[]; actionItems: object[]; decisions: string[] };
  },
): Promise<void> {
  const at = new Date().toISOString();
  const job = { bot_id: botId, state: "completed", attempts: 1, progress: 1, created_at: at, updated_at: at };
  await db.kysely
    .insertInto("content_jobs")
    .values([
      { ...job, kind: "transcript", engine: "pocketsphinx", completed_at: at },
      ...(content.summary ? [{ ...job, kind: "summary", engine: "extractive", completed_at: at }] : []),
    ])
    .execute();
  await db.kysely
    .insertInto("transcripts")
    .values({
      bot_id: botId,
      engine: "pocketsphinx",
      language: "en",
      duration_ms: 2000,
      text: content.utterances.map((u) => u.text).join(" "),
      utterances: JSON.stringify(content.utterances),
      completed_at: at,
    })
    .execute();
  if (!content.summary) return;
  const { overview, keyPoints, actionItems, decisions } = content.summary;
  await db.kysely
    .insertInto("summaries")
    .values({
      bot_id: botId,
      engine: "extractive",
      overview,
      key_points: JSON.stringify(keyPoints),
      action_items: JSON.stringify(actionItems),
      decisions: JSON.stringify(decisions),
      completed_at: at,
    })
    .execute();
}

/** A transcript where Alice promises the report and its summary with that action item. */
export function alicesReport(speaker: StoredUtterance["speaker"], words: StoredUtterance["words"]) {
  const text = "I will send the report tomorrow";
  return {
    utterances: [{ speaker, startMs: 100, endMs: 900, text, confidence: 0.9, words }],
    summary: {
      overview: text,
      keyPoints: [text],
      actionItems: [{ text: "Send the report", owner: "Alice", due: "tomorrow", startMs: 100 }],
      decisions: [],
    },
  };
}
