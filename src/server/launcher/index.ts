import pino from "pino";
import type { ServerConfig } from "../config.js";
import type { Launcher } from "./launcher.js";
import { LocalProcessLauncher, launcherOptions } from "./local-process.js";

/**
 * The launcher `meetbot serve` makes, as env MEETBOT_LAUNCHER chooses (config.launcher.kind). The
 * Docker and Kubernetes clients are loaded only for their launcher: the Kubernetes one alone takes
 * ~0.6 s to import, which every local server start would otherwise pay.
 */
export async function createLauncher(config: ServerConfig): Promise<Launcher> {
  const { kind, image, resources, docker } = config.launcher;
  switch (kind) {
    case "local":
      return new LocalProcessLauncher(launcherOptions(config));
    case "docker": {
      const { DockerLauncher } = await import("./docker.js");
      return new DockerLauncher({ ...docker, image, resources });
    }
    case "kubernetes": {
      const [{ KubernetesLauncher }, { kubernetesLauncherOptions }] = await Promise.all([
        import("./kubernetes.js"),
        import("./kubernetes-config.js"),
      ]);
      return new KubernetesLauncher(
        kubernetesLauncherOptions(
          config.kubernetes,
          { image, cpus: resources.cpus, memoryBytes: resources.memoryBytes },
          pino({ level: config.logLevel }),
        ),
      );
    }
  }
}
