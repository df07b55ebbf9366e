import type { PageSnapshot, Participant } from "../../platforms/adapter.js";

/**
 * Keeps each participant's id the same for the whole call while the page changes where it reads
 * them from. A page may key people one way on its stage and another way in its roster (Teams'
 * tiles by display name, its People panel by user id), so opening or closing the roster would
 * look like everyone leaving and joining again under new ids. In one reading, someone gone and
 * someone arrived under the same name are one person whose id moved: the new page id becomes an
 * alias of the id the bot reported first. A real leave and rejoin is never in one reading.
 */
export class StableParticipantIds {
  /** A page id -> the id the bot reported the person under. */
  private readonly aliases = new Map<string, string>();
  /** The last in-call reading, in stable ids. */
  private last: readonly Participant[] = [];

  /** The same reading with stable ids (its speakers too); only in-call readings carry a roster. */
  stable(snap: PageSnapshot): PageSnapshot {
    if (snap.phase !== "in_call") return snap;
    const participants = snap.participants.map((p) => ({ ...p, id: this.aliases.get(p.id) ?? p.id }));
    const ids = new Set(participants.map((p) => p.id));
    const lastIds = new Set(this.last.map((p) => p.id));
    const gone = this.last.filter((p) => !ids.has(p.id));
    for (const [index, participant] of participants.entries()) {
      if (lastIds.has(participant.id)) continue;
      const same = gone.findIndex((p) => p.name === participant.name);
      if (same < 0) continue;
      const [was] = gone.splice(same, 1) as [Participant];
      const pageId = snap.participants[index]?.id as string;
      this.aliases.set(pageId, was.id);
      participant.id = was.id;
    }
    this.last = participants;
    const stableSnap: PageSnapshot = { ...snap, participants };
    if (snap.speakers) stableSnap.speakers = snap.speakers.map((id) => this.aliases.get(id) ?? id);
    return stableSnap;
  }
}
