import {
  type AssemblyAiWebhook,
  newAssemblyAiWebhookAuth,
  verifyAssemblyAiWebhook,
} from "../../intelligence/providers.js";

/** Where AssemblyAI calls back about a job's transcript (the receiver route, under /v1). */
export function assemblyAiWebhookPath(jobId: number): string {
  return `/webhook-receivers/assemblyai/${jobId}`;
}

export type WebhookReceipt = "accepted" | "unknown" | "unauthorized";

/**
 * The AssemblyAI transcripts this process is waiting for, by job id: each with the secret header
 * AssemblyAI must send back and the promise that tells the engine its webhook came. The secret
 * lives only here, in memory; a webhook that reaches another process (or this one after a restart)
 * is unknown there, and the engine's slow polling finds the transcript instead.
 */
export class AssemblyAiWebhooks {
  private readonly waiting = new Map<
    number,
    { auth: { headerName: string; headerValue: string }; arrived: () => void }
  >();

  constructor(private readonly publicBaseUrl: () => string) {}

  /** A fresh webhook for the job's transcript; `close` it when the job ends. */
  open(jobId: number, apiPrefix: string): AssemblyAiWebhook {
    const auth = newAssemblyAiWebhookAuth();
    let arrived!: () => void;
    const delivered = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    this.waiting.set(jobId, { auth, arrived });
    return { url: `${this.publicBaseUrl()}${apiPrefix}${assemblyAiWebhookPath(jobId)}`, ...auth, delivered };
  }

  close(jobId: number): void {
    this.waiting.delete(jobId);
  }

  /** An incoming webhook: checked against the job's secret header in constant time. */
  receive(jobId: number, headers: Record<string, string | string[] | undefined>): WebhookReceipt {
    const entry = this.waiting.get(jobId);
    if (!entry) return "unknown";
    if (!verifyAssemblyAiWebhook(headers, entry.auth)) return "unauthorized";
    entry.arrived();
    return "accepted";
  }
}
