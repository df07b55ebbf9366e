import type { PageSnapshot, Participant } from "../../../platforms/adapter.js";
import type { SpeakerRef } from "../../../platforms/live.js";

/** Someone in the call, as utterances and chat messages name them. */
export interface Speaker {
  participantId: string;
  name: string;
}

/** A speaker, the bot itself (`self`), or nobody the page named (null). */
export type ResolvedSpeaker = Speaker | "self" | null;

/**
 * Maps the names captions and chat print to the roster's participants (the ids the bot reports
 * participants under), from the page's readings of the roster. Someone who left is still known by
 * their name. A name the roster never had gets an id made from it (`name:<name>`, as Zoom's
 * roster ids are made), so the name is kept.
 */
export class SpeakerDirectory {
  private present: readonly Participant[] = [];
  private readonly seen = new Map<string, Participant>();

  /** `selfName`: the name the meeting shows for the bot (its display name, or its account's). */
  constructor(private readonly selfName: string) {}

  /** A reading of the page; only in-call readings carry the roster. */
  update(snap: PageSnapshot): void {
    if (snap.phase !== "in_call") return;
    this.present = snap.participants;
    for (const participant of snap.participants) this.seen.set(participant.name, participant);
  }

  resolve(ref: SpeakerRef | null): ResolvedSpeaker {
    if (!ref) return null;
    if ("self" in ref) return "self";
    // Namesakes: the page says which of them (Zoom's avatars) by their order in the roster.
    const namesakes = this.present.filter((participant) => participant.name === ref.name);
    const match = namesakes[ref.nth] ?? namesakes[0] ?? this.seen.get(ref.name);
    if (match) return { participantId: match.id, name: match.name };
    // Pages that mark nothing as the user's (Teams' captions) print the bot's name for its own
    // words: with nobody else of that name in the call, that is the bot.
    if (ref.name === this.selfName) return "self";
    return { participantId: `name:${ref.name}`, name: ref.name };
  }
}
