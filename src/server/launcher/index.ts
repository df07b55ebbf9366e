import type { ServerConfig } from "../config.js";
import { StartupError } from "../startup-error.js";
import { DockerLauncher } from "./docker.js";
import type { Launcher } from "./launcher.js";
import { LocalProcessLauncher, launcherOptions } from "./local-process.js";

/** The launcher `meetbot serve` makes, as env MEETBOT_LAUNCHER chooses (config.launcher.kind). */
export function createLauncher(config: ServerConfig): Launcher {
  const { kind, image, resources, docker } = config.launcher;
  switch (kind) {
    case "local":
      return new LocalProcessLauncher(launcherOptions(config));
    case "docker":
      return new DockerLauncher({ ...docker, image, resources });
    case "kubernetes":
      // The Kubernetes launcher (src/server/launcher/kubernetes.ts) plugs in here.
      throw new StartupError("MEETBOT_LAUNCHER=kubernetes: the Kubernetes launcher is not built yet");
  }
}
