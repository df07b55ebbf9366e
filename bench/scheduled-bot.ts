/**
 * `make bench`, scheduled bots' part: how close to its time the server deploys a bot created with
 * `joinAt` (its deploy time is joinAt − MEETBOT_SCHEDULE_LEAD_MS; the schedule worker looks every
 * second), how long the cold start then takes (deploy → IN_CALL, real runner and Chromium against
 * the mock Meet), and so how much of the lead is left when the bot is in the meeting. Bots run one
 * after another on one server with the default lead (60 s), each created 65 s ahead, so the
 * server waits about 5 s before deploying it. Prints figures only.
 *
 *   node --import tsx bench/scheduled-bot.ts
 */
import { pathToFileURL } from "node:url";
import { startMockHost } from "../fixtures/host/server.js";
import { startBenchServer } from "./bench-server.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const LEAD_MS = 60_000;
const AHEAD_MS = 65_000;

const ms = (v: number) => `${Math.round(v)} ms`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const mock = await startMockHost({ port: 0 });
  const server = await startBenchServer(mock.url, 0, { MEETBOT_SCHEDULE_LEAD_MS: String(LEAD_MS) });
  const late: number[] = [];
  const coldStart: number[] = [];
  const leadLeft: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const joinAt = new Date(Date.now() + AHEAD_MS).toISOString();
      const bot = await server.api.createBot({
        meetingInfo: {
          platform: "google",
          // Meet codes are letters only: abc-defg-hij.
          meetingUrl: `${mock.url}/meet/sch-benc-${String.fromCharCode(97 + i).repeat(3)}?admit=open&endAfterMs=2000`,
        },
        botDisplayName: "Scheduled bench bot",
        joinAt,
      });
      const done = await server.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
      if (done.status !== "DONE")
        throw new Error(`bot ${bot.id} ended ${done.status}: ${JSON.stringify(done.deploymentError)}`);
      // The API's log entries carry createdAt; the client's type names only what it shows.
      const logs = (await server.api.botLogs(bot.id)) as { message: string; createdAt?: string }[];
      const deployedAt = Date.parse(
        logs.find((log) => log.message.startsWith("deployment started"))?.createdAt ?? "",
      );
      const events = await server.api.botEvents(bot.id);
      const joinedAt = Date.parse(events.find((e) => e.eventType === "BOT_JOINED")?.eventTime ?? "");
      late.push(deployedAt - (Date.parse(joinAt) - LEAD_MS));
      coldStart.push(joinedAt - deployedAt);
      leadLeft.push(Date.parse(joinAt) - joinedAt);
    }
  } finally {
    await server.close();
    await mock.close();
  }
  console.log(`scheduled bots (${RUNS} runs, lead ${LEAD_MS / 1000} s, median, then each run):`);
  console.log(`  deployed after joinAt − lead: ${ms(median(late))}  [${late.map(ms).join(", ")}]`);
  console.log(`  deploy → in the call:         ${ms(median(coldStart))}  [${coldStart.map(ms).join(", ")}]`);
  console.log(`  in the call before joinAt:    ${ms(median(leadLeft))}  [${leadLeft.map(ms).join(", ")}]`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
