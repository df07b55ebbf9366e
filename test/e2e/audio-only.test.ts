import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wordAccuracy } from "../../src/intelligence/word-error-rate.js";
import { inspectRecording } from "../../src/runner/probe.js";
import { NOTES_SCRIPT, type NotesUser, notesUser, recordScriptedMeeting } from "../helpers/meeting-notes.js";
import { startStack } from "../helpers/stack.js";

/**
 * Audio-only bots (`recording: {video: false}`) end to end on all three platforms: a real bot
 * records the scripted mock meeting as sound alone, and its recording is stored as m4a, streamed
 * as audio/mp4, shared with an audio player, transcribed and summarized like a video recording.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
let user: NotesUser;

beforeAll(async () => {
  stack = await startStack();
  user = await notesUser(stack.api.baseUrl);
});
afterAll(async () => {
  await stack?.close();
});

const SCRIPT_TEXT = NOTES_SCRIPT.map((line) => line.text).join(" ");

// The three platforms at once: an audio-only bot costs ~0.15 core, and 8 of them record on two
// cores without a dropout (bench/audio-only.ts).
describe.concurrent.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 300_000 }, (platform) => {
  it("records sound alone, served, shared, transcribed and summarized", async () => {
    const { bot } = await recordScriptedMeeting(stack, user, platform, { recording: { video: false } });
    expect(bot.status).toBe("DONE");
    expect(bot.recording).toMatchObject({ format: "m4a" });
    // The platform's own switch turned the other participants' video off (no tile decoded).
    const runnerLog = await readFile(join(stack.dataDir, "bots", String(bot.id), "runner.log"), "utf8");
    const outcome = /"msg":"incoming video (turned off|stays on)"/.exec(runnerLog)?.[0];
    expect(
      outcome,
      runnerLog.split("\n").find((line) => line.includes("stays on")),
    ).toContain("turned off");

    const link = await user.request("GET", `/v1/recordings/${bot.id}/download`);
    const path = join(stack.dataDir, `audio-only-${bot.id}.m4a`);
    await writeFile(path, Buffer.from(await (await fetch(link.body.url)).arrayBuffer()));
    const file = await inspectRecording(path);
    expect(file.streams).toEqual([{ type: "audio", codec: "aac" }]);
    expect(file.meanVolumeDb).toBeGreaterThan(-50);

    const stream = await fetch(new URL(`/v1/recordings/${bot.id}/stream`, stack.api.baseUrl), {
      headers: { authorization: `Bearer ${user.token}`, range: "bytes=0-99" },
    });
    expect(stream.status).toBe(206);
    expect(stream.headers.get("content-type")).toBe("audio/mp4");
    expect((await stream.arrayBuffer()).byteLength).toBe(100);

    const share = await user.request("POST", `/v1/recordings/${bot.id}/share`, {});
    expect(share.status).toBe(201);
    const page = await fetch(share.body.url, { headers: { accept: "text/html" } });
    expect(await page.text()).toMatch(/<audio controls [^>]*src="[^"]+\/stream"><\/audio>/);

    // Generous: the machine is shared.
    const transcript = await user.settled(`/v1/transcripts/${bot.id}/status`, 180_000);
    expect(transcript).toMatchObject({ status: "completed", engine: "pocketsphinx", error: null });
    const text = (await user.request("GET", `/v1/transcripts/${bot.id}`)).body.text as string;
    expect(wordAccuracy(SCRIPT_TEXT, text), text).toBeGreaterThanOrEqual(0.85);
    expect(await user.settled(`/v1/summaries/${bot.id}/status`, 120_000)).toMatchObject({
      status: "completed",
    });
  });
});
