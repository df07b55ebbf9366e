import { createHash } from "node:crypto";
import type { ChatMessageReading, SpeakerRef } from "../../../platforms/live.js";
import { type ChatMessage, LIVE_TEXT_MAX } from "../../core/index.js";
import type { ResolvedSpeaker } from "./speakers.js";

export interface ChatTrackerOptions {
  resolve(ref: SpeakerRef | null): ResolvedSpeaker;
  emit(message: ChatMessage): void;
  now(): Date;
  /**
   * Whether a message the page does not mark as the user's is the bot's anyway: one it is sending
   * right now, shown under its own name (a page that marks nothing).
   */
  claimsOwn?(senderName: string, text: string): boolean;
}

/**
 * Turns readings of the chat messages on screen into `chat.message` events, each message once:
 * by the platform's id when the page shows one, else by an id made of its sender, its text and
 * how many such messages came before it in the list (the same message read again, after the panel
 * re-rendered or the bot reconnected, has the same id). A message is taken once it has text.
 */
export class ChatTracker {
  private readonly reported = new Set<string>();

  constructor(private readonly opts: ChatTrackerOptions) {}

  update(readings: readonly ChatMessageReading[]): void {
    const occurrences = new Map<string, number>();
    for (const reading of readings) {
      const text = reading.text.trim();
      if (text === "") continue;
      const sender = reading.sender;
      const who = reading.own ? "(self)" : sender && "name" in sender ? `${sender.name}#${sender.nth}` : "";
      const content = `${who}\n${text}`;
      const count = (occurrences.get(content) ?? 0) + 1;
      occurrences.set(content, count);
      const messageId = (reading.id ?? `chat-${digest(content)}-${count}`).slice(0, 300);
      if (this.reported.has(messageId)) continue;
      this.reported.add(messageId);
      let speaker = reading.own ? "self" : this.opts.resolve(sender);
      if (speaker && speaker !== "self" && this.opts.claimsOwn?.(speaker.name, text)) speaker = "self";
      this.opts.emit({
        messageId,
        sender: speaker === "self" ? null : speaker,
        text: text.slice(0, LIVE_TEXT_MAX),
        sentAt: this.opts.now().toISOString(),
        fromBot: speaker === "self",
      });
    }
  }
}

const digest = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);
