import { describe, expect, it } from "vitest";
import type { PageSnapshot, Participant } from "../../platforms/adapter.js";
import { PageWatcher } from "../../src/runner/page-watcher.js";
import { StableParticipantIds } from "../../src/runner/participant-ids.js";

const inCall = (participants: Participant[], speakers?: string[]): PageSnapshot => ({
  phase: "in_call",
  participants,
  ...(speakers ? { speakers } : {}),
});

describe("StableParticipantIds", () => {
  it("keeps the first ids when the page moves from its tiles to its roster and back", () => {
    const ids = new StableParticipantIds();
    const tiles = [
      { id: "Alice Example", name: "Alice Example" },
      { id: "Bob Example", name: "Bob Example" },
    ];
    expect(ids.stable(inCall(tiles)).participants).toEqual(tiles);
    const roster = ids.stable(
      inCall(
        [
          { id: "8:orgid:a", name: "Alice Example" },
          { id: "8:orgid:b", name: "Bob Example" },
        ],
        ["8:orgid:b"],
      ),
    );
    expect(roster.participants).toEqual(tiles);
    expect(roster.speakers).toEqual(["Bob Example"]);
    // The roster closed again, its ids kept on the tiles: still the same people.
    expect(ids.stable(inCall(tiles)).participants).toEqual(tiles);
  });

  it("tells a real leave and a new arrival apart: another name, or not in the same reading", () => {
    const ids = new StableParticipantIds();
    ids.stable(inCall([{ id: "p1", name: "Alice" }]));
    // Alice left and Carol came in the same reading: two people.
    expect(ids.stable(inCall([{ id: "p2", name: "Carol" }])).participants).toEqual([
      { id: "p2", name: "Carol" },
    ]);
    // Alice back in a later reading, under a new id: a new arrival, as the page says.
    expect(
      ids.stable(
        inCall([
          { id: "p2", name: "Carol" },
          { id: "p3", name: "Alice" },
        ]),
      ).participants,
    ).toEqual([
      { id: "p2", name: "Carol" },
      { id: "p3", name: "Alice" },
    ]);
  });

  it("matches namesakes one to one, and leaves readings outside the call as they are", () => {
    const ids = new StableParticipantIds();
    ids.stable(
      inCall([
        { id: "t1", name: "Sam" },
        { id: "t2", name: "Sam" },
      ]),
    );
    expect(
      ids.stable(
        inCall([
          { id: "r1", name: "Sam" },
          { id: "r2", name: "Sam" },
          { id: "r3", name: "Sam" },
        ]),
      ).participants,
    ).toEqual([
      { id: "t1", name: "Sam" },
      { id: "t2", name: "Sam" },
      { id: "r3", name: "Sam" },
    ]);
    const lobby: PageSnapshot = { phase: "lobby", participants: [] };
    expect(ids.stable(lobby)).toBe(lobby);
  });
});

it("gives every reader of the page watcher the stable ids", () => {
  const watcher = new PageWatcher();
  const seen: string[][] = [];
  watcher.on("change", (snap) => seen.push(snap.participants.map((p) => p.id)));
  watcher.update(inCall([{ id: "Alice Example", name: "Alice Example" }]));
  watcher.update(inCall([{ id: "8:orgid:a", name: "Alice Example" }]));
  expect(seen).toEqual([["Alice Example"], ["Alice Example"]]);
  expect(watcher.current.participants).toEqual([{ id: "Alice Example", name: "Alice Example" }]);
});
