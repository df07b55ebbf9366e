import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack } from "../helpers/stack.js";

/**
 * `meetbot serve` on HTTPS with a self-signed certificate and a real runner process: it calls back
 * and uploads over TLS trusting nothing but what its BotConfig says, with no setup of its own.
 */

let dir: string;
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "meetbot-tls-e2e-"));
  const cert = path.join(dir, "meetbot.pem");
  const key = path.join(dir, "meetbot.key");
  await promisify(execFile)("openssl", [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
    ...["-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=meetbot"],
    ...["-addext", "subjectAltName=IP:127.0.0.1"],
  ]);
  // This test process is the API client: it trusts the certificate as an operator's client would.
  setDefaultCACertificates([...getCACertificates("default"), await readFile(cert, "utf8")]);
  stack = await startStack({ env: { MEETBOT_TLS_CERT: cert, MEETBOT_TLS_KEY: key } });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("a bot of a server that serves HTTPS itself", () => {
  it("reports every status and uploads its recording over TLS, downloadable from an https link", async () => {
    const { api, mock, control } = stack;
    expect(api.baseUrl).toMatch(/^https:\/\//);
    const code = "tls-defg-hij";
    await control.configure("google", code, { participants: 1, admit: "open" });
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}` },
      botDisplayName: "TLS Bot",
    });
    await api.deploy(bot.id);
    await stack.endOnceSeen("google", code, bot.id, 1);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 90_000 });
    expect(final.deploymentError ?? null, JSON.stringify(final.deploymentError)).toBeNull();
    expect(final.status).toBe("DONE");

    const download = await api.recordingDownload(bot.id);
    expect(download.url.startsWith(`${api.baseUrl}/v1/recordings/${bot.id}/file?`)).toBe(true);
    const media = await stack.downloadRecording(bot.id);
    expect(media.streams.map((s) => `${s.type}:${s.codec}`).sort()).toEqual(["audio:aac", "video:h264"]);
  });
});
