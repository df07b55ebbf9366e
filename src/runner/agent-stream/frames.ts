import { z } from "zod";
import type { CallbackEventBody } from "../../core/index.js";

/**
 * The audio stream's frame protocol (docs/api.md, "A live audio channel for agents"), both ways
 * on one WebSocket:
 *
 * - bot → agent: first a JSON `start` frame, then a `participants` frame (who is in the call now),
 *   then the meeting's sound as binary frames of FRAME_MS of 16-bit little-endian mono PCM at the
 *   stream's sample rate, and JSON frames for speaker changes and participants joining or leaving.
 * - agent → bot: binary frames of the same format, played into the meeting in order as they come
 *   (any length, whole samples); a JSON `{"type":"clear"}` drops what is queued and not yet heard
 *   (barge-in). Other JSON is ignored, so agents may send frames of newer protocol versions.
 */

/** Milliseconds of sound per binary frame the bot sends (20 ms: 640 bytes at 16 kHz). */
export const FRAME_MS = 20;
export const ENCODING = "pcm_s16le";

export interface StartFrame {
  type: "start";
  botId: number;
  sampleRate: number;
  encoding: typeof ENCODING;
  channels: 1;
  frameMs: number;
}

export function startFrame(botId: number, sampleRate: number): StartFrame {
  return { type: "start", botId, sampleRate, encoding: ENCODING, channels: 1, frameMs: FRAME_MS };
}

export interface Participant {
  participantId: string;
  participantName: string;
}

/** The JSON frame that tells the agent about a reported event; null for events it does not get. */
export function eventFrame(body: CallbackEventBody): Record<string, unknown> | null {
  switch (body.type) {
    case "speaker.started":
    case "speaker.stopped":
    case "participant.joined":
    case "participant.left": {
      const { participantId, participantName } = body.data;
      return { type: body.type, participantId, participantName, at: new Date().toISOString() };
    }
    default:
      return null;
  }
}

/** The agent's JSON frames the bot acts on. */
const AgentMessage = z.object({ type: z.literal("clear") });
export type AgentMessage = z.infer<typeof AgentMessage>;

/** An agent's text frame: a message the bot acts on, or null (not JSON, or a type it ignores). */
export function parseAgentMessage(text: string): AgentMessage | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = AgentMessage.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/**
 * Cuts a byte stream of 16-bit PCM (pipes split it anywhere) into frames of `frameBytes`; the
 * rest waits for the next chunk.
 */
export class FrameCutter {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly frameBytes: number) {}

  push(chunk: Buffer): Buffer[] {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const frames: Buffer[] = [];
    let at = 0;
    for (; at + this.frameBytes <= data.length; at += this.frameBytes) {
      frames.push(data.subarray(at, at + this.frameBytes));
    }
    // A copy: the pipe's buffer may be reused.
    this.pending = Buffer.from(data.subarray(at));
    return frames;
  }
}

/** Bytes of one frame of `ms` at `sampleRate` (16-bit mono). */
export function frameBytes(sampleRate: number, ms: number = FRAME_MS): number {
  return ((sampleRate * ms) / 1000) * 2;
}
