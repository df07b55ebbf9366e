/**
 * `make bench`: a bot that speaks. A real bot (runner, Chromium, the control plane)
 * is in a mock Meet call whose page hears the bot's microphone as a real meeting does. Prints:
 *
 * - `POST /v1/bots/{id}/speak` → the first sound the meeting hears, p50/p95/max over BENCH_SPEAKS
 *   sentences (the server renders the speech before it answers, then the runner's poll, the clip's
 *   fetch, the unmute click and the playing: all of it);
 * - the CPU the bot's process tree uses while silent and while it speaks without a pause, and
 *   the difference: what speaking adds.
 *
 * The meeting's clock: `heard.levels` are 100 ms windows from the bot's admission (the first
 * entry of its microphone's history). Figures only; asserts nothing.
 */
import { startMockHost } from "../fixtures/host/server.js";
import { botInSilentMeetCall, startBenchServer } from "./bench-server.js";
import { sampleTree } from "./process-tree.js";
import { figures } from "./figures.js";

const SPEAKS = Number(process.env.BENCH_SPEAKS ?? 8);
const SENTENCE = "I will send the report to the team tomorrow";
const CPU_SAMPLE_MS = 10_000;

interface Attendee {
  mic: { changes: Array<{ at: string }> };
  heard: { levels: Array<{ atMs: number; dbfs: number }> };
}

async function main() {
  const mock = await startMockHost({ port: 0 });
  const { api, launcher, close } = await startBenchServer(mock.url);
  const code = "voi-cebe-nch";
  const control = (suffix: string, init?: RequestInit) =>
    fetch(`${mock.url}/control/meetings/google/${code}${suffix}`, init).then((r) => r.json());
  try {
    // The participant is silent: every sound the meeting hears is the bot's.
    const botId = await botInSilentMeetCall(api, mock.url, code, { botDisplayName: "Bench Voice" });
    const attendee = async () => ((await control("")) as { attendees: Attendee[] }).attendees[0] as Attendee;
    const admittedAt = Date.parse((await attendee()).mic.changes[0]?.at ?? "");

    const firstSound: number[] = [];
    for (let i = 0; i < SPEAKS; i++) {
      const asked = Date.now();
      const command = await api.speak(botId, SENTENCE);
      for (;;) {
        const status = (await api.command(botId, command.commandId)).status;
        if (status === "done" || status === "failed") break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const heard = (await attendee()).heard.levels.find(
        (level) => admittedAt + level.atMs >= asked && level.dbfs > -40,
      );
      // The window's start: the sound came within the 100 ms after it.
      if (heard) firstSound.push(admittedAt + heard.atMs - asked);
    }
    console.log(`speak → first sound heard by the meeting: ${figures(firstSound)}`);

    const pid = launcher.pid(botId);
    if (pid) {
      const silent = await sampleTree(pid, CPU_SAMPLE_MS);
      let speaking = true;
      const talk = (async () => {
        while (speaking) {
          const command = await api.speak(botId, `${SENTENCE} `.repeat(3));
          for (;;) {
            const status = (await api.command(botId, command.commandId)).status;
            if (status === "done" || status === "failed" || !speaking) break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const loud = await sampleTree(pid, CPU_SAMPLE_MS);
      speaking = false;
      await talk;
      console.log(
        `bot process tree: ${silent.cores.toFixed(2)} cores silent, ${loud.cores.toFixed(2)} while speaking ` +
          `(speaking adds ${(loud.cores - silent.cores).toFixed(2)})`,
      );
    }
    await api.leave(botId);
    await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 60_000 });
  } finally {
    await close();
    await mock.close();
  }
}

await main();
