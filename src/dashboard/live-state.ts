import type { ChatMessageView, LiveEvent } from "../server/schemas/live.js";

/**
 * What a bot's live stream adds up to on its page: the live transcript, the chat, the source's
 * note, whether the recording is paused. Pure (no fetch, no DOM): bot-live.ts feeds it the stream.
 */

/** An utterance of the live transcript as the page shows it: growing until it is final. */
export interface LiveUtterance {
  utteranceId: string;
  speaker: { participantId: string; name: string } | null;
  text: string;
  startMs: number;
  final: boolean;
}

export interface BotLive {
  utterances: LiveUtterance[];
  chat: ChatMessageView[];
  /** The latest transcript.source note ("captions unavailable: …"), if any. */
  sourceNote: string | null;
  /** The recording is paused (recording.paused, until recording.resumed). */
  recordingPaused: boolean;
}

export const EMPTY_LIVE: BotLive = { utterances: [], chat: [], sourceNote: null, recordingPaused: false };

/** `current` with `event` of the live stream applied. */
export function applyLiveEvent(current: BotLive, event: LiveEvent): BotLive {
  const data = event.data;
  switch (event.type) {
    case "transcript.partial":
    case "transcript.final": {
      const utterance: LiveUtterance = {
        utteranceId: String(data.utteranceId),
        speaker: (data.speaker as LiveUtterance["speaker"]) ?? null,
        text: String(data.text),
        startMs: Number(data.startMs),
        final: event.type === "transcript.final",
      };
      const others = current.utterances.filter((u) => u.utteranceId !== utterance.utteranceId);
      const utterances = [...others, utterance].sort((a, b) => a.startMs - b.startMs);
      return { ...current, utterances };
    }
    case "chat.message":
      return { ...current, chat: [...current.chat, data as unknown as ChatMessageView] };
    case "transcript.source":
      return {
        ...current,
        sourceNote:
          data.state === "active"
            ? null
            : `${String(data.source)} ${String(data.state)}${data.reason ? `: ${String(data.reason)}` : ""}`,
      };
    case "recording.paused":
    case "recording.resumed":
      return { ...current, recordingPaused: event.type === "recording.paused" };
    default:
      return current;
  }
}
