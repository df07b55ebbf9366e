import { describe, expect, it } from "vitest";
import type { CallbackEventBody } from "../../src/core/index.js";
import { SpeakerTimeline } from "../../src/runner/live-transcript/speakers.js";
import { UtteranceReports } from "../../src/runner/live-transcript/utterances.js";

/**
 * The live transcript's bookkeeping with fake inputs: hypotheses from a source, speaker turns on
 * a clock the test sets, and the events that come out.
 */

const ALICE = { participantId: "p-1", name: "Alice" };
const BOB = { participantId: "p-2", name: "Bob" };

function setUp() {
  let now = 0;
  const speakers = new SpeakerTimeline(() => now);
  const reported: CallbackEventBody[] = [];
  const reports = new UtteranceReports({
    source: "pocketsphinx",
    idPrefix: "ps",
    language: "en-US",
    speakers,
    report: (body) => reported.push(body),
  });
  return {
    speakers,
    reports,
    reported,
    at: (ms: number) => {
      now = ms;
    },
    /** `type id "text"` per event, to read at a glance. */
    lines: () =>
      reported.map((e) =>
        e.type === "transcript.partial" || e.type === "transcript.final"
          ? `${e.type.slice(11)} ${e.data.utteranceId} "${e.data.text}"`
          : e.type,
      ),
  };
}

describe("UtteranceReports", () => {
  it("reports each new whole text as a partial of one stable id, then exactly one final", () => {
    const t = setUp();
    t.reports.partial(7, { text: "thanks", startMs: 1000, endMs: 1700 });
    t.reports.partial(7, { text: "thanks everyone", startMs: 1000, endMs: 2700 });
    // Unchanged or empty: nothing new to say.
    t.reports.partial(7, { text: " thanks  everyone ", startMs: 1000, endMs: 3700 });
    t.reports.partial(7, { text: "", startMs: 1000, endMs: 3700 });
    t.reports.final(7, { text: "thanks everyone for joining", startMs: 1000, endMs: 4000 });
    // Nothing follows a final.
    t.reports.partial(7, { text: "thanks everyone for joining us", startMs: 1000, endMs: 4500 });
    t.reports.final(7, { text: "thanks everyone for joining us", startMs: 1000, endMs: 4500 });
    expect(t.lines()).toEqual([
      'partial ps-1 "thanks"',
      'partial ps-1 "thanks everyone"',
      'final ps-1 "thanks everyone for joining"',
    ]);
  });

  it("numbers utterances in the order they are first reported, whatever the source's keys", () => {
    const t = setUp();
    t.reports.partial(40, { text: "one", startMs: 0, endMs: 500 });
    t.reports.final(12, { text: "two", startMs: 600, endMs: 900 });
    t.reports.partial(41, { text: "three", startMs: 1000, endMs: 1500 });
    t.reports.final(40, { text: "one more", startMs: 0, endMs: 800 });
    t.reports.final(41, { text: "three", startMs: 1000, endMs: 1800 });
    expect(t.lines()).toEqual([
      'partial ps-1 "one"',
      'final ps-2 "two"',
      'partial ps-3 "three"',
      'final ps-1 "one more"',
      'final ps-3 "three"',
    ]);
  });

  it("says nothing of an utterance without words, but settles one that had partials even when it ends empty", () => {
    const t = setUp();
    t.reports.final(1, { text: "  ", startMs: 0, endMs: 900 });
    t.reports.partial(2, { text: "uh", startMs: 1000, endMs: 1500 });
    t.reports.final(2, { text: "", startMs: 1000, endMs: 1600 });
    expect(t.lines()).toEqual(['partial ps-1 "uh"', 'final ps-1 ""']);
  });

  it("carries times on the recording's clock in whole ms, source and language", () => {
    const t = setUp();
    t.reports.final(1, { text: "hello", startMs: 1234.6, endMs: 1200 });
    expect(t.reported[0]).toEqual({
      type: "transcript.final",
      data: {
        utteranceId: "ps-1",
        speaker: null,
        text: "hello",
        startMs: 1235,
        endMs: 1235,
        source: "pocketsphinx",
        language: "en-US",
      },
    });
  });

  it("names who the speaking indicator showed most during the utterance, else nobody", () => {
    const t = setUp();
    t.at(500);
    t.speakers.started(ALICE.participantId, ALICE.name);
    t.at(1200);
    t.speakers.stopped(ALICE.participantId);
    t.speakers.started(BOB.participantId, BOB.name);
    t.at(4000);
    t.speakers.stopped(BOB.participantId);
    t.at(9000);
    t.speakers.started(ALICE.participantId, ALICE.name);
    t.at(9500);
    // Alice 200 ms of it, Bob 2.5 s.
    t.reports.final(1, { text: "the budget", startMs: 1000, endMs: 3500 });
    // Nobody spoke then.
    t.reports.final(2, { text: "hm", startMs: 5000, endMs: 6000 });
    // Alice is still speaking: her turn counts up to now.
    t.reports.partial(3, { text: "i will", startMs: 8800, endMs: 9400 });
    const speakers = t.reported.map((e) =>
      e.type === "transcript.final" || e.type === "transcript.partial" ? e.data.speaker : undefined,
    );
    expect(speakers).toEqual([BOB, null, ALICE]);
  });

  it("the speaker timeline forgets turns that ended before what is still to be named", () => {
    const t = setUp();
    t.speakers.started(ALICE.participantId, ALICE.name);
    t.at(1000);
    t.speakers.stopped(ALICE.participantId);
    t.speakers.started(BOB.participantId, BOB.name);
    t.at(2000);
    t.speakers.forgetBefore(1500);
    expect(t.speakers.dominant(0, 1000)).toBeNull();
    expect(t.speakers.dominant(0, 3000)).toEqual(BOB);
  });

  it("the speaker timeline says when the turn goes to someone else, not when the same person goes on", () => {
    const t = setUp();
    let changes = 0;
    t.speakers.onTurnChange(() => changes++);
    t.speakers.started(ALICE.participantId, ALICE.name);
    t.speakers.stopped(ALICE.participantId);
    t.speakers.started(ALICE.participantId, ALICE.name);
    expect(changes).toBe(0);
    t.speakers.started(BOB.participantId, BOB.name);
    expect(changes).toBe(1);
    // Alice was still on: not a new start of hers.
    t.speakers.started(ALICE.participantId, ALICE.name);
    t.speakers.stopped(BOB.participantId);
    expect(changes).toBe(1);
    t.speakers.stopped(ALICE.participantId);
    t.speakers.started(ALICE.participantId, ALICE.name);
    expect(changes).toBe(2);
  });

  it("the speaker timeline keeps only speaker events from what the bot reports", () => {
    const t = setUp();
    t.speakers.note({ type: "participant.joined", data: { participantId: "p-1", participantName: "Alice" } });
    t.speakers.note({ type: "speaker.started", data: { participantId: "p-1", participantName: "Alice" } });
    t.at(800);
    t.speakers.note({ type: "speaker.stopped", data: { participantId: "p-1", participantName: "Alice" } });
    t.at(5000);
    expect(t.speakers.dominant(0, 5000)).toEqual(ALICE);
    expect(t.speakers.dominant(900, 5000)).toBeNull();
  });
});
