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
