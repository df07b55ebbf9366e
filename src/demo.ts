import { mkdir } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { startMockHost } from "../fixtures/host/server.js";
import { ApiClient, type BotEventView } from "./client/api-client.js";
import { BOT_STATUSES } from "./core/index.js";
import { verifyWebhook } from "./client/webhooks.js";
import { inspectRecording } from "./runner/probe.js";
import { startServer } from "./server/main.js";

/**
 * `meetbot demo`: a mock Google Meet, a control plane and one bot, all on this machine. Prints
 * the bot's life as it happens, and the signed webhooks its callbackUrl receives, and checks the
 * recording at the end. Exits 0 only if the bot reached DONE with a recording that has both video
 * and audio, and every webhook up to bot.ended arrived with a valid signature.
 */
export async function runDemo(): Promise<number> {
  const started = Date.now();
  const say = (text: string) => {
    const t = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
    process.stdout.write(`[${t}s] ${text}\n`);
  };
  const dataDir = resolve(".data", `demo-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  await mkdir(dataDir, { recursive: true });
  const mock = await startMockHost({ port: 0 });
  const server = await startServer({
    port: 0,
    dataDir,
    allowedMeetingHosts: ["127.0.0.1"],
    logLevel: "warn",
    // The demo polls four times a second to show every step as it happens.
    rateLimit: { perMinute: 0, perHour: 0 },
    // Its webhook receiver is on this machine: a private target, refused in production mode.
    outbound: { allowPrivateTargets: true },
  });
  say(`mock Google Meet on ${mock.url}, control plane on ${server.url}, data in ${dataDir}`);
  let closeReceiver = async () => {};
  try {
    const api = new ApiClient(server.url);
    await api.register(`demo-${Date.now()}@example.com`, "demo-password-123", "Demo User");
    const meetingUrl = `${mock.url}/meet/abc-defg-hij?participants=2&admit=auto&admitAfterMs=2000&endAfterMs=15000`;
    const { secret } = await api.signingSecret();
    const receiver = await startWebhookReceiver(secret, say);
    closeReceiver = receiver.close;
    const bot = await api.createBot({
      callbackUrl: receiver.url,
      meetingInfo: { platform: "google", meetingUrl },
      botDisplayName: "Meetbot Demo",
      meetingTitle: "Demo meeting",
    });
    say(`created bot ${bot.id} (${bot.status}) for ${meetingUrl}`);
    const deployed = await api.deploy(bot.id);
    say(`status ${deployed.status}`);

    // Statuses come from the aggregated event list, so none is missed however quickly they
    // follow each other; participants and recording events from the bot's own list. The
    // aggregated list also has events that are not statuses (RECORDING): the bot's own list
    // shows those (RECORDING_STARTED).
    const shown = new Set<string>();
    const showNew = async () => {
      const statuses = (await api.events({ bot_id: bot.id, page_size: 100 })).events.filter((e) =>
        (BOT_STATUSES as readonly string[]).includes(e.eventType),
      );
      const events = await api.botEvents(bot.id);
      const fresh = [
        ...statuses.map((e) => ({
          key: `s${e.id}`,
          time: e.eventTime,
          text: `status ${e.eventType}${describe(e)}`,
        })),
        ...events.map((e) => ({
          key: `e${e.id}`,
          time: e.eventTime,
          text: `  event ${e.eventType}${describe(e)}`,
        })),
      ]
        .filter((line) => !shown.has(line.key))
        .sort((a, b) => a.time.localeCompare(b.time));
      for (const line of fresh) {
        shown.add(line.key);
        say(line.text);
      }
    };
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], {
      timeoutMs: 120_000,
      intervalMs: 250,
      onPoll: showNew,
    });
    await showNew();
    if (final.status !== "DONE") {
      say(`bot failed: ${JSON.stringify(final.deploymentError)}`);
      for (const line of await api.botLogs(bot.id)) say(`  log ${line.level}: ${line.message}`);
      return 1;
    }
    const download = await api.recordingDownload(bot.id);
    const path = join(dataDir, "recordings", `${bot.id}.mp4`);
    const inspection = await inspectRecording(path);
    say(`recording: ${path}`);
    say(`  download link (valid until ${download.expiresAt}): ${download.url}`);
    say(`  duration ${inspection.durationSeconds.toFixed(2)} s, ${final.recording?.sizeBytes ?? "?"} bytes`);
    for (const s of inspection.streams) {
      say(`  stream ${s.type}: ${s.codec}${s.width ? ` ${s.width}x${s.height}` : ""}`);
    }
    say(`  audio mean ${inspection.meanVolumeDb} dB, max ${inspection.maxVolumeDb} dB`);
    say(`  ${inspection.changedFrames} video frames differ from the previous one`);
    const types = inspection.streams.map((s) => s.type);
    if (!types.includes("video") || !types.includes("audio")) {
      say("FAILED: the recording lacks a video or an audio stream");
      return 1;
    }
    if (!(await receiver.ended(10_000))) {
      say("FAILED: the bot.ended webhook did not arrive");
      return 1;
    }
    if (receiver.rejected > 0) {
      say(`FAILED: ${receiver.rejected} webhook(s) failed signature verification`);
      return 1;
    }
    say(`webhooks: ${receiver.verified} deliveries to the callbackUrl, every signature verified`);
    say("demo OK: the bot joined, recorded and finished");
    return 0;
  } finally {
    await closeReceiver();
    await server.close();
    await mock.close();
  }
}

function describe(event: BotEventView): string {
  const data = event.data ?? {};
  const name = data.participantName;
  if (typeof name === "string") return `: ${name}`;
  if (typeof data.subCode === "string") return `: ${data.subCode}`;
  return "";
}

/**
 * The bot's callbackUrl: checks each delivery's signature with the helper the package ships for
 * receivers, and says what came.
 */
async function startWebhookReceiver(secret: string, say: (text: string) => void) {
  let verified = 0;
  let rejected = 0;
  let onEnded = () => {};
  const ended = new Promise<void>((resolve) => {
    onEnded = resolve;
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const result = verifyWebhook({ rawBody: Buffer.concat(chunks), headers: req.headers, secret });
      if (!result.ok) {
        rejected += 1;
        say(`  webhook REJECTED (${result.reason})`);
        res.writeHead(401).end();
        return;
      }
      verified += 1;
      say(`  webhook ${result.webhook.event} (signed ${result.webhook.id})`);
      res.writeHead(204).end();
      if (result.webhook.event === "bot.ended") onEnded();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/meetbot-webhooks`,
    get verified() {
      return verified;
    },
    get rejected() {
      return rejected;
    },
    /** Whether bot.ended arrives within `timeoutMs`. */
    ended: (timeoutMs: number) =>
      Promise.race([
        ended.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
      ]),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
