import pino from "pino";
import type { ServerConfig } from "../config.js";
import { DockerLauncher } from "./docker.js";
import { KubernetesLauncher } from "./kubernetes.js";
import { kubernetesLauncherOptions } from "./kubernetes-config.js";
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
      return new KubernetesLauncher(
        kubernetesLauncherOptions(
          config.kubernetes,
          { image, cpus: resources.cpus, memoryBytes: resources.memoryBytes },
          pino({ level: config.logLevel }),
        ),
      );
  }
}
