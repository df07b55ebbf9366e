import { useState } from "preact/hooks";
import { api } from "../api.js";
import type { BotLive } from "../bot-live.js";
import { ErrorNote, formatClock, formatTime, useAction } from "./ui.js";

/**
 * The meeting as it happens: the live transcript growing (an utterance still being said is marked
 * so), and the chat beside it, with a box to write into it while the bot is in the call.
 */
export function LiveMeeting({ botId, live, inCall }: { botId: number; live: BotLive; inCall: boolean }) {
  return (
    <div class="columns">
      <section aria-label="Live transcript">
        <h3>Live transcript</h3>
        {live.sourceNote ? <p class="muted">{live.sourceNote}</p> : null}
        {live.utterances.length === 0 ? (
          <p class="empty">Nothing said yet.</p>
        ) : (
          <ol class="transcript live-transcript">
            {live.utterances.map((utterance) => (
              <li key={utterance.utteranceId} aria-busy={utterance.final ? undefined : "true"}>
                <time>{formatClock(utterance.startMs)}</time>
                <bdi class="speaker">{utterance.speaker?.name ?? "Unknown speaker"}</bdi>
                <bdi class="said">{utterance.text}</bdi>
                {utterance.final ? null : <span class="muted"> …</span>}
              </li>
            ))}
          </ol>
        )}
      </section>
      <section aria-label="Chat">
        <h3>Chat</h3>
        {live.chat.length === 0 ? (
          <p class="empty">No messages.</p>
        ) : (
          <ol class="chat">
            {live.chat.map((message) => (
              <li key={message.messageId}>
                <time>{formatTime(message.sentAt)}</time>{" "}
                <bdi class="speaker">{message.fromBot ? "The bot" : (message.sender?.name ?? "Someone")}</bdi>{" "}
                <bdi class="said">{message.text}</bdi>
              </li>
            ))}
          </ol>
        )}
        {inCall ? <ChatBox botId={botId} /> : null}
      </section>
    </div>
  );
}

function ChatBox({ botId }: { botId: number }) {
  const [text, setText] = useState("");
  const action = useAction();
  const send = async (event: Event) => {
    event.preventDefault();
    const sent = await action.run(() => api("POST", `/v1/bots/${botId}/chat`, { body: { text } }));
    if (sent) setText("");
  };
  return (
    <form class="chat-box" onSubmit={send}>
      <label>
        Message to the meeting
        <input value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} required />
      </label>
      <button type="submit" disabled={action.busy || text.trim() === ""}>
        Send
      </button>
      <ErrorNote error={action.error} />
    </form>
  );
}
