import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiClient } from "../src/client/api-client.js";
import { resolveConfig } from "../src/server/config.js";
import { LocalProcessLauncher, launcherOptions } from "../src/server/launcher/local-process.js";
import { startServer } from "../src/server/main.js";

/** A fresh control plane on a temporary data dir, with a signed-up client, for one measurement. */
export async function startBenchServer(mockUrl: string, warmRunners = 0, extraEnv: NodeJS.ProcessEnv = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "meetbot-bench-"));
  // Runners reach the Zoom and Teams mocks through the server's base-URL settings, as an operator sets them.
  const env = {
    ...process.env,
    MEETBOT_ZOOM_WEB_BASE_URL: mockUrl,
    MEETBOT_TEAMS_WEB_BASE_URL: mockUrl,
    ...extraEnv,
  };
  const launcher = new LocalProcessLauncher({
    ...launcherOptions(resolveConfig({ dataDir, env })),
    warmRunners,
  });
  const server = await startServer({
    port: 0,
    dataDir,
    env,
    launcher,
    allowedMeetingHosts: ["127.0.0.1"],
    logLevel: "warn",
    // The bench polls every 50 ms to time each step.
    rateLimit: { perMinute: 0, perHour: 0 },
  });
  const api = new ApiClient(server.url);
  await api.register(`bench-${Date.now()}@example.com`, "bench-password-1", "Bench");
  return {
    api,
    launcher,
    dataDir,
    close: async () => {
      await server.close();
      await launcher.close();
    },
  };
}

/**
 * A bot of `api` in the mock Meet call `code` whose one participant is silent (every sound in the
 * call is the bench's), deployed and in the call, with its recording and roster settled.
 */
export async function botInSilentMeetCall(
  api: ApiClient,
  mockUrl: string,
  code: string,
  body: Record<string, unknown>,
): Promise<number> {
  await fetch(`${mockUrl}/control/meetings/google/${code}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ admit: "open", participants: 1, media: "silent" }),
  });
  const bot = await api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${mockUrl}/meet/${code}` },
    ...body,
  });
  await api.deploy(bot.id);
  await api.waitForStatus(bot.id, ["IN_CALL"], { timeoutMs: 90_000 });
  await new Promise((resolve) => setTimeout(resolve, 3_000)); // the recording and roster settle
  return bot.id;
}
