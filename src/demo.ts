import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { startMockHost } from "../fixtures/host/server.js";
import { ApiClient, type BotEventView } from "./client/api-client.js";
import { inspectRecording } from "./runner/probe.js";
import { startServer } from "./server/main.js";

/**
 * `meetbot demo`: a mock Google Meet, a control plane and one bot, all on this machine. Prints
 * the bot's life as it happens and checks the recording at the end. Exits 0 only if the bot
 * reached DONE with a recording that has both video and audio.
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
  });
  say(`mock Google Meet on ${mock.url}, control plane on ${server.url}, data in ${dataDir}`);
  try {
    const api = new ApiClient(server.url);
    await api.register(`demo-${Date.now()}@example.com`, "demo-password-123", "Demo User");
    const meetingUrl = `${mock.url}/meet/abc-defg-hij?participants=2&admit=auto&admitAfterMs=2000&endAfterMs=15000`;
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl },
      botDisplayName: "Meetbot Demo",
      meetingTitle: "Demo meeting",
    });
    say(`created bot ${bot.id} (${bot.status}) for ${meetingUrl}`);
    const deployed = await api.deploy(bot.id);
    say(`status ${deployed.status}`);

    // Statuses come from the aggregated event list, so none is missed however quickly they
    // follow each other; participants and recording events from the bot's own list.
    const shown = new Set<string>();
    const showNew = async () => {
      const statuses = (await api.events({ bot_id: bot.id, page_size: 100 })).events;
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
    say("demo OK: the bot joined, recorded and finished");
    return 0;
  } finally {
    await server.close();
    await mock.close();
  }
}

function describe(event: BotEventView): string {
  if (event.eventType === "RECORDING") return "";
  const data = event.data ?? {};
  const name = data.participantName;
  if (typeof name === "string") return `: ${name}`;
  if (typeof data.subCode === "string") return `: ${data.subCode}`;
  return "";
}
