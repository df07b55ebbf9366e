import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startMockHost } from "../../fixtures/host/server.js";
import { ApiClient } from "../../src/client/api-client.js";
import type { BotConfig } from "../../src/core/index.js";
import { probeDurationMs } from "../../src/media/untrusted-input.js";
import { inspectRecording, type RecordingInspection } from "../../src/runner/probe.js";
import { resolveConfig, type WatchdogConfig } from "../../src/server/config.js";
import {
  findRepoRoot,
  LocalProcessLauncher,
  launcherOptions,
} from "../../src/server/launcher/local-process.js";
import { startServer } from "../../src/server/main.js";
import { type SseEvent, StreamClient } from "./sse-client.js";
import { pollUntil } from "./poll.js";
import { aTestFailed } from "./test-outcome.js";

/**
 * The whole system on loopback for end-to-end tests: the mock meeting host, the control plane
 * on a temporary SQLite data dir, and real runner processes (the compiled CLI) launched by the
 * default local launcher. Nothing is faked but the meeting pages.
 */
export async function startStack(
  opts: {
    warmRunners?: number;
    /** Set in the server's environment (as on `meetbot serve`) besides this process's. */
    env?: NodeJS.ProcessEnv;
    watchdog?: Partial<WatchdogConfig>;
    /**
     * Changes each BotConfig the server launches, as a test that plays the server's part (a login
     * the server does not yet hand out, a callback address) writes it.
     */
    editConfig?: (config: BotConfig) => BotConfig | Promise<BotConfig>;
  } = {},
) {
  if (!existsSync(join(findRepoRoot(), "dist", "src", "cli.js"))) {
    throw new Error("end-to-end tests run the compiled runner: run `make build` first");
  }
  const mock = await startMockHost({ port: 0 });
  const dataDir = await mkdtemp(join(tmpdir(), "meetbot-e2e-"));
  // Runners reach the Zoom and Teams mocks through the server's base-URL settings, which it puts
  // in every BotConfig: set the way an operator sets them on `meetbot serve`.
  const env = {
    ...process.env,
    MEETBOT_ZOOM_WEB_BASE_URL: mock.url,
    MEETBOT_TEAMS_WEB_BASE_URL: mock.url,
    ...opts.env,
  };
  const serverOptions = {
    dataDir,
    env,
    allowedMeetingHosts: ["127.0.0.1"],
    logLevel: "warn",
    // Tests poll as fast as they like; rate limits have tests of their own.
    rateLimit: { perMinute: 0, perHour: 0 },
    ...(opts.watchdog ? { watchdog: opts.watchdog } : {}),
  };
  // The launcher `meetbot serve` would make from that configuration; the tests keep a handle on it.
  const newLauncher = (warmRunners: number) =>
    new LocalProcessLauncher({ ...launcherOptions(resolveConfig(serverOptions)), warmRunners });
  const launcher = newLauncher(opts.warmRunners ?? 0);
  if (opts.editConfig) {
    const edit = opts.editConfig;
    const launch = launcher.launch.bind(launcher);
    launcher.launch = async (config) => launch(await edit(config));
  }
  let server = await startServer({ ...serverOptions, port: 0, launcher });
  const api = new ApiClient(server.url);
  await api.register(`e2e-${Date.now()}@example.com`, "e2e-password-123", "E2E");
  const port = server.port;
  const extraLaunchers: LocalProcessLauncher[] = [];

  const control = new MockControl(mock.url);
  return {
    mock,
    dataDir,
    launcher,
    api,
    control,
    /**
     * Fetches a bot's recording through its signed download link, as a client would, and says
     * what is in it (streams, duration, sound level, and with `motion`, how its picture moves).
     */
    async downloadRecording(botId: number, opts: { motion?: boolean } = {}): Promise<RecordingInspection> {
      const response = await fetch((await api.recordingDownload(botId)).url);
      if (response.status !== 200)
        throw new Error(`download of bot ${botId}'s recording: HTTP ${response.status}`);
      const file = join(dataDir, `downloaded-${botId}.mp4`);
      await writeFile(file, Buffer.from(await response.arrayBuffer()));
      return inspectRecording(file, opts);
    },
    /**
     * Waits until bot `botId`'s runner log has a line matching `pattern`: a step the API does not
     * report, such as the silence clock starting or incoming video turned off (settled in the call).
     */
    async runnerLogged(botId: number, pattern: RegExp): Promise<void> {
      await eventually(
        async () =>
          pattern.test(await readFile(launcher.logFile(botId), "utf8").catch(() => "")) ? true : undefined,
        `bot ${botId}'s runner to log ${pattern}`,
        90_000,
      );
    },
    /**
     * One line on where bot `botId` stands, for a failed assertion's message (the CI summary shows
     * only an error's first line): its status, its error, and its runner's last log messages.
     */
    async describeBot(botId: number, logLines = 4): Promise<string> {
      const bot = await api.bot(botId).catch(() => undefined);
      const log = await readFile(launcher.logFile(botId), "utf8").catch(() => "");
      const last = log
        .trim()
        .split("\n")
        .slice(-logLines)
        .map((line) => {
          try {
            const { msg, phase, hook, variant, reason, leave, err } = JSON.parse(line) as Record<
              string,
              unknown
            >;
            const detail = [phase, hook, variant, reason, leave, err]
              .filter((part) => part !== undefined)
              .join(" ");
            return `${String(msg)}${detail ? ` (${detail})` : ""}`.slice(0, 160);
          } catch {
            return line.slice(0, 160);
          }
        });
      const error = bot?.deploymentError
        ? ` ${bot.deploymentError.code} (${bot.deploymentError.message})`
        : "";
      return `bot ${botId} ${bot?.status ?? "unknown"}${error}; runner's last: ${last.join(" | ")}`;
    },
    /**
     * Waits until bot `botId` reported waiting in the lobby, for a host who then admits or denies
     * it: an admission on a timer could come before a starved bot had seen the lobby at all.
     */
    async sawLobby(botId: number): Promise<void> {
      await eventually(
        async () => {
          const { events } = await api.events({ bot_id: botId, page_size: 100 });
          return events.some((e) => e.eventType === "IN_WAITING_ROOM") ? true : undefined;
        },
        `bot ${botId} in the lobby`,
        90_000,
      );
    },
    /** Waits until bot `botId` reported `count` participants joining (its roster opened). */
    async sawJoin(botId: number, count: number): Promise<void> {
      await eventually(
        async () => {
          const events = await api.botEvents(botId);
          return events.filter((e) => e.eventType === "PARTICIPANT_JOINED").length >= count
            ? true
            : undefined;
        },
        `bot ${botId} to see ${count} participant(s) join`,
        90_000,
      );
    },
    /**
     * Ends the meeting as its host does, once bot `botId` has seen `count` participants join and
     * recorded `recordedMs`: a call everyone was seen in, however slow the machine (a fixed
     * endAfterMs ended calls before a loaded bot's roster opened).
     */
    async endOnceSeen(platform: string, meetingId: string, botId: number, count: number, recordedMs = 2000) {
      await this.sawJoin(botId, count);
      await this.recordedOnDisk(botId, recordedMs);
      await control.end(platform, meetingId);
    },
    /**
     * Ends the meeting as its host does once bot `botId`'s live stream (read from its first event)
     * showed `count` participants each speak a whole turn (started, then stopped) after its
     * recording started (`turnsEach` turns each, for a test that tells speakers apart by their
     * turns: the turns already under way when the bot first looks all start at that moment, so only
     * a later one starts where the speaker did): their turns are then in the recording, however
     * late it started. A bot that ended by itself, or never recorded, is left to the caller's
     * assertions.
     */
    async endOnceEachSpoke(platform: string, meetingId: string, botId: number, count: number, turnsEach = 1) {
      const recordingSince = await eventually(
        async () => {
          const events = await api.botEvents(botId);
          const started = events.find((e) => e.eventType === "RECORDING_STARTED");
          if (started) return Date.parse(String(started.data?.startedAt));
          return events.some((e) => e.eventType === "ERROR") ? Number.NaN : undefined;
        },
        `bot ${botId} recording`,
        90_000,
      );
      if (Number.isNaN(recordingSince)) return;
      const live = await StreamClient.open(
        api.baseUrl,
        api.bearerToken,
        { "last-event-id": "0" },
        `/v1/bots/${botId}/live`,
      );
      try {
        await live.until(
          (events) => spokeEach(turnsSince(events, recordingSince), turnsEach) >= count || botEnded(events),
        );
      } finally {
        live.close();
      }
      await control.end(platform, meetingId);
    },
    /**
     * Waits until bot `botId`'s recording being written (or its `segment` after a restart) holds
     * `ms` of media on disk; answers its path. Not before the recording can hold it (`ms` after it
     * started), then a probe a second: ffprobe reads the whole growing file, a quarter of a
     * core-second a time on a loaded machine.
     */
    async recordedOnDisk(botId: number, ms: number, segment = "recording.mp4"): Promise<string> {
      const file = join(dataDir, "bots", String(botId), "work", segment);
      const events = await api.botEvents(botId);
      const started = events.find((e) => e.eventType === "RECORDING_STARTED");
      const soonest = Date.parse(String(started?.data?.startedAt ?? started?.eventTime)) + ms - Date.now();
      if (soonest > 0) await new Promise((resolve) => setTimeout(resolve, soonest));
      await pollUntil(
        async () => {
          const onDisk = await probeDurationMs(file).catch(() => 0);
          if (onDisk < ms) throw new Error(`bot ${botId}'s recording holds ${onDisk} ms on disk, not ${ms}`);
        },
        { timeout: 30_000, interval: 1_000 },
      );
      return file;
    },
    /**
     * Stops the control plane (runners keep going) and returns a function that starts it again:
     * with the same launcher, so later tests keep their handle on the runners it starts, or with
     * a fresh one that knows none of the running bots (as after a real restart).
     */
    async stopServer(): Promise<(opts?: { freshLauncher?: boolean }) => Promise<void>> {
      await server.close();
      return async (restartOpts = {}) => {
        let serverLauncher = launcher;
        if (restartOpts.freshLauncher) {
          serverLauncher = newLauncher(0);
          extraLaunchers.push(serverLauncher);
        }
        server = await startServer({ ...serverOptions, port, launcher: serverLauncher });
      };
    },
    async close() {
      // A test that failed half-way (or one that stops at its assertion) leaves its bot in a call
      // or still finalizing: stop every runner this stack started while the server is still up,
      // so each delivers its last events and exits at once. With the server gone first, a runner
      // retries its final report until it is killed (15 s later), in every file.
      for (const each of [launcher, ...extraLaunchers]) {
        await each.stopAll();
        await each.close();
      }
      await server.close();
      await mock.close();
      // The runners' logs, the recordings and the database stay to look into after a failed test
      // of the file, or with MEETBOT_KEEP_TEST_DATA=1.
      if (aTestFailed() || process.env.MEETBOT_KEEP_TEST_DATA === "1") {
        console.log(`kept the stack's data (runner logs, recordings, database): ${dataDir}`);
      } else {
        await rm(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      }
    },
  };
}

/** The mock host's control API, as the tests script meetings with it. */
export class MockControl {
  constructor(private readonly baseUrl: string) {}

  /**
   * Sets up a meeting's scenario before a bot arrives; answers with its state (participants...).
   * A meeting of that id is ended first: on a test's retry the failed try's bot may still be in
   * it, and the mock refuses to reconfigure an occupied meeting (409).
   */
  async configure(platform: string, id: string, scenario: Record<string, unknown>) {
    const stale = await fetch(`${this.baseUrl}/control/meetings/${platform}/${id}`, { method: "DELETE" });
    if (stale.status !== 204 && stale.status !== 404)
      throw new Error(`mock control DELETE: ${stale.status} ${await stale.text()}`);
    return this.call("PUT", platform, id, "", scenario);
  }
  state(platform: string, id: string) {
    return this.call("GET", platform, id, "");
  }
  admit(platform: string, id: string) {
    return this.call("POST", platform, id, "/admit");
  }
  deny(platform: string, id: string) {
    return this.call("POST", platform, id, "/deny");
  }
  remove(platform: string, id: string) {
    return this.call("POST", platform, id, "/remove");
  }
  end(platform: string, id: string) {
    return this.call("POST", platform, id, "/end");
  }
  /** The host starts a meeting it had not started (scenario hostStarted=false): those waiting are let on. */
  startMeeting(platform: string, id: string) {
    return this.call("POST", platform, id, "/start");
  }
  /** The script's first line goes on air now (the scenario's scriptStartAfterMs is then a fallback). */
  startScript(platform: string, id: string) {
    return this.call("POST", platform, id, "/script/start");
  }
  addParticipant(platform: string, id: string, name: string) {
    return this.call("POST", platform, id, "/participants", { name });
  }
  removeParticipant(platform: string, id: string, participantId: string) {
    return this.call("DELETE", platform, id, `/participants/${participantId}`);
  }
  /** The host mutes an attendee in the call (by default the first), as a real host can. */
  muteAttendee(platform: string, id: string, attendeeId?: string) {
    return this.call("POST", platform, id, "/mute-attendee", attendeeId ? { attendeeId } : undefined);
  }
  /** What the host heard of an attendee since its admission: a 16 kHz mono 16-bit WAV on the wall clock. */
  heardWav(platform: string, id: string, attendeeId: string): Promise<Buffer> {
    return this.bytes(platform, id, `/attendees/${attendeeId}/heard.wav`);
  }
  /** The last picture of an attendee's camera (a PNG); throws before there is one (404). */
  cameraPng(platform: string, id: string, attendeeId: string): Promise<Buffer> {
    return this.bytes(platform, id, `/attendees/${attendeeId}/camera.png`);
  }

  private async bytes(platform: string, id: string, suffix: string): Promise<Buffer> {
    const response = await fetch(`${this.baseUrl}/control/meetings/${platform}/${id}${suffix}`);
    if (!response.ok)
      throw new Error(`mock control GET ${suffix}: ${response.status} ${await response.text()}`);
    return Buffer.from(await response.arrayBuffer());
  }

  private async call(method: string, platform: string, id: string, suffix: string, body?: unknown) {
    const response = await fetch(`${this.baseUrl}/control/meetings/${platform}/${id}${suffix}`, {
      method,
      ...(body ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {}),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (!response.ok)
      throw new Error(`mock control ${method} ${suffix}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  }
}

/**
 * How many whole turns (started, then stopped speaking) the live stream reported of each
 * participant at or after `since` (ms): turns the speaker timeline holds whole.
 */
function turnsSince(events: readonly SseEvent[], since: number): Map<string, number> {
  const speaking = new Set<string>();
  const whole = new Map<string, number>();
  for (const { event, data } of events) {
    const report = data as { eventTime?: string; data?: { participantId?: string } };
    const who = report.data?.participantId;
    if (!who || Date.parse(report.eventTime ?? "") < since) continue;
    if (event === "speaker.started") speaking.add(who);
    if (event === "speaker.stopped" && speaking.delete(who)) whole.set(who, (whole.get(who) ?? 0) + 1);
  }
  return whole;
}

/** How many of the speakers in `turns` had at least `each` whole turns. */
const spokeEach = (turns: Map<string, number>, each: number) =>
  [...turns.values()].filter((count) => count >= each).length;

/** Whether the live stream reported the bot's end (DONE or FATAL). */
const botEnded = (events: readonly SseEvent[]) =>
  events.some(({ event, data }) => {
    const status = (data as { data?: { status?: string } }).data?.status;
    return event === "status" && (status === "DONE" || status === "FATAL");
  });

/** Waits until `check` returns a value (not undefined), polling it until `timeoutMs`. */
export function eventually<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  return pollUntil(
    async () => {
      const value = await check();
      if (value === undefined) throw new Error(`still waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 200 },
  );
}

/** Waits until a command is done or failed (its result is in); answers it. */
export const commandOutcome = (api: ApiClient, botId: number, commandId: number, timeoutMs = 60_000) =>
  eventually(
    async () => {
      const command = await api.command(botId, commandId);
      return ["done", "failed"].includes(command.status) ? command : undefined;
    },
    `command ${commandId}`,
    timeoutMs,
  );
