import websocket from "@fastify/websocket";
import Fastify, { type FastifyInstance } from "fastify";

/**
 * A voice agent on 127.0.0.1 for a bot's audio stream (bot option audioStream): a real WebSocket
 * server that keeps what the bot sends (JSON frames, the meeting's sound with arrival times) and
 * answers each sound it hears (a frame loud after a quiet stretch) with a tone: the smallest agent
 * that "replies to what it hears". `restart()` closes it and listens again on the same port, as an
 * agent's server that restarts. Used by test/e2e/agent-stream.test.ts and bench/agent-stream.ts.
 */
export interface ReceivedFrame {
  /** Wall-clock ms of arrival. */
  at: number;
  /** 16-bit mono samples. */
  pcm: Int16Array;
  /** Which connection (0, 1, ...) it came on. */
  connection: number;
}

export interface ToneReply {
  /** Wall-clock ms when the agent sent it. */
  sentAt: number;
  /** Arrival of the frame whose sound it answers. */
  heardAt: number;
}

export interface AgentServerOptions {
  /** The reply: a sine of this frequency and length (default 2000 Hz, 400 ms). */
  replyHz?: number;
  replyMs?: number;
  /** A frame louder than this (dBFS RMS) after QUIET_MS of quieter ones is a sound to answer. */
  onsetDbfs?: number;
}

const QUIET_MS = 150;

export async function startAgentServer(opts: AgentServerOptions = {}) {
  const replyHz = opts.replyHz ?? 2000;
  const replyMs = opts.replyMs ?? 400;
  const onsetDbfs = opts.onsetDbfs ?? -40;
  const state = {
    connections: 0,
    /** The `authorization` header of each connection's opening request. */
    authorizations: [] as Array<string | undefined>,
    json: [] as Array<Record<string, unknown> & { connection: number }>,
    frames: [] as ReceivedFrame[],
    replies: [] as ToneReply[],
    /** Replies are sent only while true (a test may want to listen first). */
    answering: true,
  };
  let port = 0;
  let app: FastifyInstance;

  const listen = async () => {
    app = Fastify();
    await app.register(websocket);
    app.get("/agent", { websocket: true }, (socket, request) => {
      const connection = state.connections++;
      state.authorizations.push(request.headers.authorization);
      let quietSince = Date.now();
      let sampleRate = 16_000;
      socket.on("message", (data: Buffer, isBinary: boolean) => {
        if (!isBinary) {
          const frame = JSON.parse(data.toString("utf8")) as Record<string, unknown>;
          if (frame.type === "start") sampleRate = Number(frame.sampleRate);
          state.json.push({ ...frame, connection });
          return;
        }
        const at = Date.now();
        // A copy into its own buffer: the message's bytes may start at an odd offset.
        const pcm = new Int16Array(Uint8Array.from(data).buffer, 0, Math.floor(data.length / 2));
        state.frames.push({ at, pcm, connection });
        if (dbfs(pcm) <= onsetDbfs) {
          quietSince = Math.min(quietSince, at);
          return;
        }
        const onset = at - quietSince >= QUIET_MS;
        quietSince = Number.POSITIVE_INFINITY;
        if (!onset || !state.answering) return;
        socket.send(tone(replyHz, replyMs, sampleRate));
        state.replies.push({ sentAt: Date.now(), heardAt: at });
      });
      socket.on("close", () => {});
    });
    await app.listen({ host: "127.0.0.1", port });
    port = (app.server.address() as { port: number }).port;
  };
  await listen();

  return {
    state,
    get url() {
      return `ws://127.0.0.1:${port}/agent`;
    },
    /** Closes (every connection with it) and listens again on the same port. */
    async restart(): Promise<void> {
      await app.close();
      await listen();
    },
    /** Sends a JSON frame (e.g. `{type: "clear"}`) or sound to every connection. */
    broadcast(frame: Record<string, unknown> | Buffer): void {
      for (const client of app.websocketServer.clients) {
        client.send(Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
      }
    },
    close: () => app.close(),
  };
}

/** RMS level of 16-bit samples in dBFS (-Infinity for zeros). */
export function dbfs(pcm: Int16Array): number {
  if (pcm.length === 0) return Number.NEGATIVE_INFINITY;
  let sum = 0;
  for (const sample of pcm) sum += (sample / 32768) ** 2;
  return 10 * Math.log10(sum / pcm.length);
}

/**
 * The level (dBFS) of one frequency in `pcm` (Goertzel over a Hann window): whether a tone of that
 * frequency is in a frame, whatever else sounds beside it.
 */
export function toneLevel(pcm: Int16Array, hz: number, sampleRate: number): number {
  const n = pcm.length;
  const coefficient = 2 * Math.cos((2 * Math.PI * hz) / sampleRate);
  let previous = 0;
  let beforePrevious = 0;
  for (let i = 0; i < n; i++) {
    const window = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    const value = ((pcm[i] ?? 0) / 32768) * window + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = value;
  }
  const power = previous ** 2 + beforePrevious ** 2 - coefficient * previous * beforePrevious;
  // A full-scale sine's amplitude comes out as n/4 with the window: scale it to RMS dBFS like dbfs().
  const amplitude = (2 * Math.sqrt(Math.max(power, 0))) / (n / 2);
  return 20 * Math.log10(amplitude / Math.SQRT2);
}

/** A sine of `hz` for `ms` at amplitude 0.3, as 16-bit PCM. */
export function tone(hz: number, ms: number, sampleRate: number): Buffer {
  const samples = Math.round((sampleRate * ms) / 1000);
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    out.writeInt16LE(Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * hz * i) / sampleRate)), i * 2);
  }
  return out;
}
