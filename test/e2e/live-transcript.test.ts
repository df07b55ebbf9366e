import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SpokenLine } from "../../fixtures/host/script.js";
import type { CallbackEvent, Utterance } from "../../src/core/index.js";
import { wordAccuracy } from "../../src/intelligence/word-error-rate.js";
import { openDatabase } from "../../src/server/db/database.js";
import { startStack } from "../helpers/stack.js";

/**
 * The live transcript from pocketsphinx with a real bot in a scripted mock Meet:
 * three lines read by flite voices, the bot's runner recognizing its own meeting sound as it
 * plays. What the runner reported is read from its spool (`events.jsonl` in its work dir: every
 * event it reported, in order, with its seq), and the server's receipts show it took each one.
 * The mock's `spoken` list is the ground truth.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  // The server does not yet hand liveTranscript to its runners: the test plays that part.
  stack = await startStack({
    editConfig: (config) => ({ ...config, liveTranscript: { source: "pocketsphinx", fallback: false } }),
  });
});
afterAll(async () => {
  await stack?.close();
});

const SCRIPT = [
  { participant: "Alice Example", text: "Thanks everyone for joining the weekly planning meeting" },
  { participant: "Bob Example", text: "The budget review is finished and the numbers look good" },
  { participant: "Alice Example", text: "I will send the report to the team tomorrow" },
];

type TranscriptEvent = Extract<CallbackEvent, { type: "transcript.partial" | "transcript.final" }>;

describe("live transcript from pocketsphinx", () => {
  it(
    "reports partials, then one final per utterance, with the script's words and readers",
    { timeout: 180_000 },
    async () => {
      const meetingId = "liv-sphx-aaa";
      await stack.control.configure("google", meetingId, {
        admit: "open",
        participants: 2,
        script: SCRIPT,
        scriptStartAfterMs: 3000,
        endAfterScript: true,
      });
      const bot = await stack.api.createBot({
        meetingInfo: { platform: "google", meetingUrl: `${stack.mock.url}/meet/${meetingId}` },
        botDisplayName: "Live Bot",
        recording: { video: false },
      });
      await stack.api.deploy(bot.id);
      const final = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
      expect(final.status).toBe("DONE");

      const spool = await readFile(
        join(stack.dataDir, "bots", String(bot.id), "work", "events.jsonl"),
        "utf8",
      );
      const events = spool
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as CallbackEvent);
      const sources = events.filter((e) => e.type === "transcript.source").map((e) => e.data);
      expect(sources).toEqual([{ source: "pocketsphinx", state: "active" }]);
      const transcript = events.filter(
        (e): e is TranscriptEvent => e.type === "transcript.partial" || e.type === "transcript.final",
      );
      // Every one of them was delivered and applied by the server.
      const db = await openDatabase({ kind: "sqlite", file: join(stack.dataDir, "meetbot.sqlite") });
      try {
        const receipts = await db.kysely
          .selectFrom("callback_receipts")
          .select(["seq", "event_type"])
          .where("bot_id", "=", bot.id)
          .execute();
        const taken = new Set(receipts.map((r) => `${r.seq} ${r.event_type}`));
        expect(transcript.filter((e) => !taken.has(`${e.seq} ${e.type}`))).toEqual([]);
      } finally {
        await db.close();
      }

      // Per utterance: partials first (each the whole text so far), then exactly one final, then nothing.
      const byId = new Map<string, TranscriptEvent[]>();
      for (const e of transcript) byId.set(e.data.utteranceId, [...(byId.get(e.data.utteranceId) ?? []), e]);
      const finals: Array<{ utterance: Utterance; hadPartial: boolean }> = [];
      for (const [id, list] of byId) {
        const types = list.map((e) => e.type);
        expect({ id, types }).toEqual({
          id,
          types: [...types.filter((t) => t === "transcript.partial"), "transcript.final"],
        });
        finals.push({ utterance: (list.at(-1) as TranscriptEvent).data, hadPartial: list.length > 1 });
      }
      const done = events.findIndex((e) => e.type === "status" && e.data.status === "DONE");
      expect(transcript.every((e) => events.indexOf(e) < done)).toBe(true);

      // The script's lines on the recording's clock, from the mock's ground truth.
      const started = events.find((e) => e.type === "recording.started");
      const origin = Date.parse(String(started?.data.startedAt));
      const meeting = (await stack.control.state("google", meetingId)) as { spoken: SpokenLine[] };
      expect(meeting.spoken.map((l) => l.text)).toEqual(SCRIPT.map((l) => l.text));
      const lines = meeting.spoken.map((line) => ({
        ...line,
        startMs: Date.parse(line.startedAt) - origin,
        endMs: Date.parse(line.endedAt ?? "") - origin,
      }));
      // An utterance belongs to the line it overlaps most (page playout lags the host by a few
      // hundred ms: the line is taken to run 1 s past its end).
      const lineOf = (u: Utterance) => {
        const overlap = (l: (typeof lines)[number]) =>
          Math.min(u.endMs, l.endMs + 1000) - Math.max(u.startMs, l.startMs);
        const best = lines.reduce((a, b) => (overlap(b) > overlap(a) ? b : a));
        return overlap(best) > 0 ? best : null;
      };

      let errors = 0;
      let words = 0;
      let rightSpeaker = 0;
      const heard = lines.map((line) => {
        const own = finals.filter((f) => lineOf(f.utterance) === line);
        const text = own.map((f) => f.utterance.text).join(" ");
        const count = line.text.split(" ").length;
        words += count;
        errors += (1 - wordAccuracy(line.text, text)) * count;
        if (own.length > 0 && own.every((f) => f.utterance.speaker?.name === line.participant))
          rightSpeaker += 1;
        return { line: line.text, text, hadPartial: own.some((f) => f.hadPartial) };
      });
      // Partials came for every line before its final (a line of ~3 s is long enough).
      expect(heard.filter((h) => !h.hadPartial)).toEqual([]);
      // Nothing was heard where nobody spoke.
      expect(finals.filter((f) => f.utterance.text && !lineOf(f.utterance))).toEqual([]);
      const accuracy = 1 - errors / words;
      const said = JSON.stringify({ heard, finals }, null, 1);
      expect(accuracy, said).toBeGreaterThanOrEqual(0.7);
      expect(rightSpeaker, said).toBeGreaterThanOrEqual(2);
    },
  );
});
