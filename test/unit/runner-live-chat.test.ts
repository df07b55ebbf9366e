import { describe, expect, it } from "vitest";
import type { ChatMessageReading } from "../../platforms/live.js";
import type { ChatMessage } from "../../src/core/index.js";
import { ChatTracker } from "../../src/runner/live-meeting/chat-tracker.js";
import { SpeakerDirectory } from "../../src/runner/live-meeting/speakers.js";

/** The chat's bookkeeping with fake readings of the panel: each message once, with its sender. */

const SENT_AT = new Date("2026-05-01T10:00:00.000Z");

function setUp(opts: { sending?: string[] } = {}) {
  const messages: ChatMessage[] = [];
  const speakers = new SpeakerDirectory("Note Bot");
  speakers.update({
    phase: "in_call",
    participants: [
      { id: "p-1", name: "Alice" },
      { id: "p-2", name: "Note Bot" },
    ],
  });
  const tracker = new ChatTracker({
    resolve: (ref) => speakers.resolve(ref),
    emit: (message) => messages.push(message),
    now: () => SENT_AT,
    claimsOwn: (name, text) => name === "Note Bot" && (opts.sending ?? []).includes(text),
  });
  return { tracker, messages };
}

const from = (name: string, text: string, id: string | null = null): ChatMessageReading => ({
  id,
  text,
  sender: { name, nth: 0 },
  own: false,
});
const own = (text: string, id: string | null = null): ChatMessageReading => ({
  id,
  text,
  sender: { self: true },
  own: true,
});

describe("the chat tracker", () => {
  it("reports each message once by the platform's id, however often the panel shows it", () => {
    const { tracker, messages } = setUp();
    const hello = from("Alice", "Hello", "spaces/x/messages/1");
    tracker.update([hello]);
    tracker.update([hello]);
    // Re-rendered (the panel reopened), with a new message after it.
    tracker.update([{ ...hello }, from("Alice", "Hello", "spaces/x/messages/2")]);
    expect(messages).toEqual([
      {
        messageId: "spaces/x/messages/1",
        sender: { participantId: "p-1", name: "Alice" },
        text: "Hello",
        sentAt: SENT_AT.toISOString(),
        fromBot: false,
      },
      expect.objectContaining({ messageId: "spaces/x/messages/2", text: "Hello" }),
    ]);
  });

  it("makes ids of sender, text and order where the page has none: the same words twice are two messages", () => {
    const { tracker, messages } = setUp();
    tracker.update([from("Alice", "ok"), from("Alice", "ok")]);
    tracker.update([from("Alice", "ok"), from("Alice", "ok"), from("Alice", "ok"), from("Bob", "ok")]);
    expect(messages.map((m) => [m.sender?.name, m.text])).toEqual([
      ["Alice", "ok"],
      ["Alice", "ok"],
      ["Alice", "ok"],
      ["Bob", "ok"],
    ]);
    expect(new Set(messages.map((m) => m.messageId)).size).toBe(4);
    // A fresh page showing the same list (a reconnect) adds nothing.
    tracker.update([from("Alice", "ok"), from("Alice", "ok"), from("Alice", "ok"), from("Bob", "ok")]);
    expect(messages).toHaveLength(4);
  });

  it("marks the bot's own messages fromBot, with no sender", () => {
    const { tracker, messages } = setUp();
    tracker.update([own("Recording this call", "m-1")]);
    expect(messages).toEqual([expect.objectContaining({ messageId: "m-1", sender: null, fromBot: true })]);
  });

  it("takes a message the page does not mark as the bot's for its own only while the bot sends those words", () => {
    const { tracker, messages } = setUp({ sending: ["my words"] });
    tracker.update([from("Note Bot", "my words", "m-1"), from("Note Bot", "their words", "m-2")]);
    expect(messages.map((m) => [m.messageId, m.fromBot, m.sender?.participantId ?? null])).toEqual([
      ["m-1", true, null],
      // A namesake of the bot in the roster: someone else.
      ["m-2", false, "p-2"],
    ]);
  });

  it("waits for a message's text before taking it", () => {
    const { tracker, messages } = setUp();
    tracker.update([from("Alice", "", "m-1")]);
    expect(messages).toEqual([]);
    tracker.update([from("Alice", "  Hi there ", "m-1")]);
    expect(messages.map((m) => m.text)).toEqual(["Hi there"]);
  });
});
