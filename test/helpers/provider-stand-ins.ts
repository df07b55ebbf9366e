import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Stand-ins that speak the real APIs: local HTTP servers on 127.0.0.1 that receive what the
 * provider engines send (the real services cannot be reached from here) and answer in each
 * provider's documented format.
 */
export interface StandInRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface StandInAnswer {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
}

/** "hang": never answer (the engine's timeout or abort must end the call). */
export type StandInHandler = (
  request: StandInRequest,
) => StandInAnswer | "hang" | Promise<StandInAnswer | "hang">;

export interface StandIn {
  baseUrl: string;
  requests: StandInRequest[];
  close(): Promise<void>;
}

export async function startStandIn(handle: StandInHandler): Promise<StandIn> {
  const requests: StandInRequest[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const request = {
        method: req.method ?? "",
        url: new URL(req.url ?? "/", "http://127.0.0.1"),
        headers: req.headers,
        body: Buffer.concat(parts),
      };
      requests.push(request);
      void Promise.resolve(handle(request)).then((answer) => {
        if (answer === "hang") return;
        res.writeHead(answer.status ?? 200, { "content-type": "application/json", ...answer.headers });
        res.end(answer.json === undefined ? "" : JSON.stringify(answer.json));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface MultipartPart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

/** Parses a multipart/form-data body as a real server would: by the boundary of its Content-Type. */
export function parseMultipart(headers: IncomingHttpHeaders, body: Buffer): MultipartPart[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(headers["content-type"] ?? "");
  if (!boundary) throw new Error(`not multipart: ${headers["content-type"]}`);
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts: MultipartPart[] = [];
  let at = body.indexOf(delimiter);
  for (;;) {
    const next = body.indexOf(delimiter, at + delimiter.length);
    if (next < 0) break;
    // Each part: CRLF, headers, CRLF CRLF, data, CRLF, then the next delimiter.
    const part = body.subarray(at + delimiter.length + 2, next - 2);
    const split = part.indexOf("\r\n\r\n");
    const head = part.subarray(0, split).toString("utf8");
    const disposition = /name="([^"]*)"(?:; filename="([^"]*)")?/.exec(head);
    parts.push({
      name: disposition?.[1] ?? "",
      filename: disposition?.[2],
      contentType: /content-type: *([^\r\n]+)/i.exec(head)?.[1],
      data: part.subarray(split + 4),
    });
    at = next;
  }
  return parts;
}

export function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The duration of a 16 kHz mono 16-bit PCM WAV, from its data chunk's size. */
export function wavDurationMs(wav: Buffer): number {
  const data = wav.indexOf("data");
  if (wav.subarray(0, 4).toString() !== "RIFF" || data < 0) throw new Error("not a WAV file");
  const channels = wav.readUInt16LE(22);
  const rate = wav.readUInt32LE(24);
  const bits = wav.readUInt16LE(34);
  const bytes = wav.length - (data + 8);
  return (bytes / (rate * channels * (bits / 8))) * 1000;
}
