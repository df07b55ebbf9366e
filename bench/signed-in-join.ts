/**
 * `make bench`: what signing in costs a bot on its way into the call. Bots run one after another
 * through one server against the same mock Meet (instant admission), anonymous and signed in
 * (`login: {mode: "always"}` with a bot account made from a session the mock issued) taking turns,
 * and it prints deploy → IN_CALL for each and p50/p95 per kind. A signed-in bot restores the
 * session into its browser and checks the pre-join shows the account before it clicks; after the
 * call it writes the rotated session back (after IN_CALL, so not in these figures). Absolute
 * times drift on a shared machine; the difference between the two kinds in the same run is the
 * figure to watch. Prints figures only; asserts nothing. BENCH_RUNS bots of each kind (default 5).
 */
import { randomBytes } from "node:crypto";
import { startMockHost } from "../fixtures/host/server.js";
import { startBenchServer } from "./bench-server.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SCENARIO = { admit: "open", participants: 1, endAfterMs: 3000 };

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};
const ms = (v: number) => `${Math.round(v)} ms`;

async function control(mockUrl: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${mockUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`mock ${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

async function main() {
  const mock = await startMockHost({ port: 0 });
  const { api, close } = await startBenchServer(mock.url, 0, {
    MEETBOT_SECRET_KEY: randomBytes(32).toString("base64"),
  });
  await control(mock.url, "PUT", "/control/accounts/google/bench-bot", { name: "Bench Account" });
  const session = await control(mock.url, "POST", "/control/accounts/google/bench-bot/sessions");
  const account = await api.createBotAccount({ platform: "google", name: "bench", session });

  const figures = { anonymous: [] as number[], "signed in": [] as number[] };
  for (let i = 0; i < RUNS * 2; i++) {
    const kind = i % 2 === 0 ? "anonymous" : "signed in";
    const code = `sig-benc-h${String.fromCharCode(97 + Math.floor(i / 26))}${String.fromCharCode(97 + (i % 26))}`;
    await control(mock.url, "PUT", `/control/meetings/google/${code}`, SCENARIO);
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}` },
      botDisplayName: "Bench Bot",
      ...(kind === "signed in" ? { login: { mode: "always", accountId: account.id } } : {}),
    });
    const deployedAt = Date.now();
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000, intervalMs: 50 });
    if (final.status !== "DONE") {
      throw new Error(
        `bench bot ${bot.id} (${kind}) ended ${final.status}: ${JSON.stringify(final.deploymentError)}`,
      );
    }
    const events = await api.events({ bot_id: bot.id, page_size: 100 });
    const inCall = events.events.find((e) => e.eventType === "IN_CALL");
    const joinedAs = (await api.botEvents(bot.id)).find((e) => e.eventType === "BOT_JOINED")?.data?.joinedAs;
    const took = inCall ? Date.parse(inCall.eventTime) - deployedAt : Number.NaN;
    figures[kind].push(took);
    process.stdout.write(
      `run ${Math.floor(i / 2) + 1}/${RUNS} ${kind}: deploy→IN_CALL ${ms(took)}${joinedAs ? ` (joined as ${String(joinedAs)})` : ""}\n`,
    );
  }
  await close();
  await mock.close();

  process.stdout.write(`\nsigned-in vs anonymous join, Meet mock, ${RUNS} bots each, same run\n`);
  for (const [kind, values] of Object.entries(figures)) {
    process.stdout.write(
      `  ${kind.padEnd(10)} deploy→IN_CALL p50 ${ms(percentile(values, 50))}, p95 ${ms(percentile(values, 95))}\n`,
    );
  }
  const delta = percentile(figures["signed in"], 50) - percentile(figures.anonymous, 50);
  process.stdout.write(`  signing in adds ${ms(delta)} at the median\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench/signed-in-join: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
