import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join as joinPath } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type {
  AttendeeState,
  AttendeeView,
  MeetingState,
  RemoteParticipant,
} from "../../fixtures/host/meetings.js";
import { type MockHost, startMockHost } from "../../fixtures/host/server.js";
import { SpeechSynthesizer } from "../../fixtures/host/speech.js";
import { inspectRecording } from "../../src/runner/probe.js";

/** Every wait on the host is bounded by this; the host pushes changes, so waits end far sooner. */
const DEADLINE_MS = 5_000;

let host: MockHost;
let codeCounter = 0;

beforeAll(async () => {
  host = await startMockHost();
});

afterAll(async () => {
  await host.close();
});

/** A fresh, valid Meet code per test so tests never share a meeting. */
function newCode(): string {
  codeCounter += 1;
  const letters = codeCounter
    .toString(26)
    .split("")
    .map((digit) => String.fromCharCode(97 + Number.parseInt(digit, 26)))
    .join("")
    .padStart(3, "a");
  return `tst-abcd-${letters}`;
}

/** What the host answers, loosely: a meeting's state, a participant, an attendee or an error's detail. */
type Answer = MeetingState & RemoteParticipant & { state: AttendeeState; detail: string };

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: Answer }> {
  const response = await fetch(`${host.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

const control = (code: string, suffix = "") => `/control/meetings/google/${code}${suffix}`;
const attendees = (code: string, suffix = "") => `/api/meetings/google/${code}/attendees${suffix}`;

async function configure(code: string, scenario: Record<string, unknown>): Promise<MeetingState> {
  const { status, json } = await call("PUT", control(code), scenario);
  expect(status).toBe(200);
  return json;
}

async function join(code: string, name = "Meetbot"): Promise<{ id: string; state: string }> {
  const { status, json } = await call("POST", attendees(code), { name });
  expect(status).toBe(201);
  return json;
}

async function state(code: string): Promise<MeetingState> {
  const { status, json } = await call("GET", control(code));
  expect(status).toBe(200);
  return json;
}

/** Reads one attendee's Server-Sent Events stream as the page's EventSource would. */
class EventStream {
  private buffer = "";
  private done = false;

  private constructor(
    private readonly reader: ReadableStreamDefaultReader<string>,
    private readonly abort: AbortController,
  ) {}

  static async open(code: string, attendeeId: string): Promise<EventStream> {
    const abort = new AbortController();
    const response = await fetch(`${host.url}${attendees(code, `/${attendeeId}/events`)}`, {
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    if (!response.body) throw new Error("event stream has no body");
    return new EventStream(response.body.pipeThrough(new TextDecoderStream()).getReader(), abort);
  }

  /** The next `state` event, or undefined once the host ended the stream. */
  private async next(deadline: number): Promise<AttendeeView | undefined> {
    for (;;) {
      const boundary = this.buffer.indexOf("\n\n");
      if (boundary >= 0) {
        const block = this.buffer.slice(0, boundary);
        this.buffer = this.buffer.slice(boundary + 2);
        const lines = block.split("\n");
        const data = lines.filter((line) => line.startsWith("data: ")).map((line) => line.slice(6));
        if (lines.includes("event: state")) return JSON.parse(data.join("\n"));
        continue;
      }
      if (this.done) return undefined;
      const chunk = await withDeadline(this.reader.read(), deadline, "the next event");
      if (chunk.done) this.done = true;
      else this.buffer += chunk.value;
    }
  }

  async waitFor(what: string, predicate: (view: AttendeeView) => boolean): Promise<AttendeeView> {
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      const view = await this.next(deadline);
      if (!view) throw new Error(`the event stream ended before ${what}`);
      if (predicate(view)) return view;
    }
  }

  /** Resolves when the host ends the stream, after any remaining events. */
  async ended(): Promise<void> {
    const deadline = Date.now() + DEADLINE_MS;
    while (await this.next(deadline)) {
      // drain: the events themselves are not needed here
    }
  }

  close(): void {
    this.abort.abort();
  }
}

function withDeadline<T>(promise: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), deadline - Date.now());
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** For the one change nobody is told about (a page going away), poll the state with a deadline. */
async function waitForState(code: string, what: string, predicate: (s: MeetingState) => boolean) {
  return vi.waitFor(
    async () => {
      const current = await state(code);
      if (!predicate(current)) throw new Error(`still waiting for ${what}: ${JSON.stringify(current)}`);
      return current;
    },
    { timeout: DEADLINE_MS, interval: 20 },
  );
}

const names = (view: AttendeeView) => view.participants.map((p) => p.name);

describe("control API: configuring meetings", () => {
  it("PUT creates a meeting with the scenario's defaults and GET returns it", async () => {
    const code = newCode();
    const created = await configure(code, {});
    expect(created).toMatchObject({
      platform: "google",
      meetingId: code,
      configuredBy: "control",
      scenario: { participants: 2, admit: "auto", admitAfterMs: 1000, media: "speech", page: "normal" },
      ended: false,
      endedAt: null,
      attendees: [],
    });
    expect(created.participants.map((p) => p.name)).toEqual(["Alice Example", "Bob Example"]);
    expect(await state(code)).toEqual(created);
  });

  it("accepts numbers as JSON numbers or digit strings", async () => {
    const code = newCode();
    const created = await configure(code, {
      participants: "4",
      admit: "manual",
      admitAfterMs: 10,
      endAfterMs: "60000",
      leaveAfterMs: 30000,
      page: "blocked",
    });
    expect(created.scenario).toEqual({
      participants: 4,
      admit: "manual",
      admitAfterMs: 10,
      endAfterMs: 60000,
      leaveAfterMs: 30000,
      media: "speech",
      page: "blocked",
      anonymous: "allowed",
      botWall: "none",
      botLobby: false,
      joinHereToo: true,
      ui: [],
    });
    expect(created.participants.map((p) => p.name)).toEqual([
      "Alice Example",
      "Bob Example",
      "Carol Example",
      "Dave Example",
    ]);
  });

  it("rejects a bad scenario with a 400 naming each bad field", async () => {
    const code = newCode();
    const bad = await call("PUT", control(code), { admit: "sometimes", admitAfterMs: -5, participants: 99 });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toContain("admit: Invalid option");
    expect(bad.json.detail).toContain("admitAfterMs: must be a whole number of milliseconds");
    expect(bad.json.detail).toContain("participants: must be at most 20");

    const typo = await call("PUT", control(code), { admitAfterMS: 5 });
    expect(typo.status).toBe(400);
    expect(typo.json.detail).toContain('Unrecognized key: "admitAfterMS"');

    const text = await call("PUT", control(code), { endAfterMs: "soon" });
    expect(text.status).toBe(400);
    expect(text.json.detail).toContain("endAfterMs: must be a whole number of milliseconds");

    expect((await call("GET", control(code))).status).toBe(404);
  });

  it("rejects an invalid meeting code and an unknown platform", async () => {
    const badCode = await call("PUT", control("not-a-code"), {});
    expect(badCode.status).toBe(400);
    expect(badCode.json.detail).toBe("'not-a-code' is not a valid google meeting id (like abc-defg-hij)");

    const webex = await call("PUT", "/control/meetings/webex/123456789", {});
    expect(webex.status).toBe(404);
    expect(webex.json.detail).toContain("no 'webex' platform");
  });

  it("answers 404 with a detail for every call on an unknown meeting", async () => {
    const code = newCode();
    const calls: [string, string, unknown?][] = [
      ["GET", control(code)],
      ["DELETE", control(code)],
      ["POST", control(code, "/admit")],
      ["POST", control(code, "/deny")],
      ["POST", control(code, "/remove")],
      ["POST", control(code, "/end")],
      ["POST", control(code, "/participants"), { name: "Zed" }],
      ["DELETE", control(code, "/participants/p-1")],
      ["POST", attendees(code), { name: "Meetbot" }],
    ];
    for (const [method, path, body] of calls) {
      const { status, json } = await call(method, path, body);
      expect({ method, path, status }).toEqual({ method, path, status: 404 });
      expect(json.detail).toBe(`no google meeting ${code} is known to the mock host`);
    }
  });

  it("DELETE forgets a meeting", async () => {
    const code = newCode();
    await configure(code, {});
    expect((await call("DELETE", control(code))).status).toBe(204);
    expect((await call("GET", control(code))).status).toBe(404);
  });

  it("PUT replaces a meeting nobody is in, but not one with an attendee", async () => {
    const code = newCode();
    await configure(code, { participants: 1 });
    const replaced = await configure(code, { participants: 3, admit: "manual" });
    expect(replaced.participants).toHaveLength(3);

    await join(code);
    const refused = await call("PUT", control(code), {});
    expect(refused.status).toBe(409);
    expect(refused.json.detail).toContain("DELETE it before configuring it again");
  });
});

describe("the page's query string as scenario", () => {
  it("configures the meeting when the page loads", async () => {
    const code = newCode();
    const page = await fetch(`${host.url}/meet/${code}?participants=3&admit=manual&hl=en`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('"screen":"prejoin"');
    const configured = await state(code);
    expect(configured.configuredBy).toBe("page");
    expect(configured.scenario).toMatchObject({ participants: 3, admit: "manual" });
  });

  it("gives a 400 for bad scenario values", async () => {
    const page = await fetch(`${host.url}/meet/${newCode()}?admit=never&admitAfterMs=1.5`);
    expect(page.status).toBe(400);
    const body = await page.json();
    expect(body.detail).toContain("admit: Invalid option");
    expect(body.detail).toContain("admitAfterMs: must be a whole number of milliseconds");
  });

  it("is ignored when the control API configured the meeting", async () => {
    const code = newCode();
    await configure(code, { admit: "manual", participants: 1 });
    const page = await fetch(`${host.url}/meet/${code}?admit=open&participants=5&admitAfterMs=bogus`);
    expect(page.status).toBe(200);
    const current = await state(code);
    expect(current.configuredBy).toBe("control");
    expect(current.scenario).toMatchObject({ admit: "manual", participants: 1 });
  });

  it("shows the not-found page for an invalid code without creating a meeting", async () => {
    const page = await fetch(`${host.url}/meet/abc-defg-hi1?admit=open`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('"screen":"not_found"');
    expect((await call("GET", control("abc-defg-hi1"))).status).toBe(404);
  });
});

describe("attendees: joining, admission and the event stream", () => {
  it("manual: lobby until admitted, then sees the participants come and go until the end", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });
    const attendee = await join(code, "Note Taker");
    expect(attendee).toEqual({ id: "a-1", name: "Note Taker", state: "lobby" });

    const events = await EventStream.open(code, attendee.id);
    try {
      const lobby = await events.waitFor("the lobby", (v) => v.attendee.state === "lobby");
      expect(lobby).toEqual({
        attendee: { id: "a-1", name: "Note Taker", state: "lobby" },
        participants: [],
      });

      const admitted = await call("POST", control(code, "/admit"));
      expect(admitted.status).toBe(200);
      expect(admitted.json.attendees[0]).toMatchObject({ id: "a-1", state: "in_call" });
      expect(admitted.json.attendees[0]?.admittedAt).toEqual(expect.any(String));
      const inCall = await events.waitFor("admission", (v) => v.attendee.state === "in_call");
      expect(names(inCall)).toEqual(["Alice Example", "Bob Example"]);
      expect(inCall.participants.map((p) => p.index)).toEqual([0, 1]);

      const added = await call("POST", control(code, "/participants"), { name: "Zed Newcomer" });
      expect(added.status).toBe(201);
      expect(added.json).toMatchObject({ id: "p-3", name: "Zed Newcomer", index: 2 });
      await events.waitFor("Zed joining", (v) => names(v).includes("Zed Newcomer"));

      const removed = await call("DELETE", control(code, "/participants/p-1"));
      expect(removed.status).toBe(200);
      expect(removed.json.participants.map((p) => p.name)).toEqual(["Bob Example", "Zed Newcomer"]);
      const afterLeave = await events.waitFor("Alice leaving", (v) => !names(v).includes("Alice Example"));
      expect(names(afterLeave)).toEqual(["Bob Example", "Zed Newcomer"]);

      const ended = await call("POST", control(code, "/end"));
      expect(ended.status).toBe(200);
      expect(ended.json).toMatchObject({ ended: true, participants: [] });
      expect(ended.json.endedAt).toEqual(expect.any(String));
      const last = await events.waitFor("the end", (v) => v.attendee.state === "ended");
      expect(last.participants).toEqual([]);
      await events.ended();

      expect((await state(code)).attendees).toMatchObject([{ id: "a-1", state: "ended" }]);
    } finally {
      events.close();
    }
  });

  it("manual: deny turns the attendee away, after which it cannot be admitted", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      const denied = await call("POST", control(code, "/deny"), { attendeeId: attendee.id });
      expect(denied.status).toBe(200);
      await events.waitFor("denial", (v) => v.attendee.state === "denied");
      await events.ended();
    } finally {
      events.close();
    }
    const late = await call("POST", control(code, "/admit"), { attendeeId: attendee.id });
    expect(late.status).toBe(409);
    expect(late.json.detail).toBe("attendee a-1 is denied, not waiting in the lobby");
  });

  it("auto: admitted by the host after admitAfterMs without any control call", async () => {
    const code = newCode();
    await configure(code, { admit: "auto", admitAfterMs: 50, participants: 1 });
    const attendee = await join(code);
    expect(attendee.state).toBe("lobby");
    const events = await EventStream.open(code, attendee.id);
    try {
      const inCall = await events.waitFor("auto admission", (v) => v.attendee.state === "in_call");
      expect(names(inCall)).toEqual(["Alice Example"]);
    } finally {
      events.close();
    }
  });

  it("deny: denied by the host after admitAfterMs", async () => {
    const code = newCode();
    await configure(code, { admit: "deny", admitAfterMs: 50 });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      await events.waitFor("the lobby", (v) => v.attendee.state === "lobby");
      await events.waitFor("denial", (v) => v.attendee.state === "denied");
    } finally {
      events.close();
    }
  });

  it("open: straight into the call", async () => {
    const code = newCode();
    await configure(code, { admit: "open", participants: 3 });
    const attendee = await join(code);
    expect(attendee.state).toBe("in_call");
  });

  it("remove: the host removes the attendee from the call", async () => {
    const code = newCode();
    await configure(code, { admit: "open" });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      await events.waitFor("the call", (v) => v.attendee.state === "in_call");
      expect((await call("POST", control(code, "/remove"))).status).toBe(200);
      await events.waitFor("removal", (v) => v.attendee.state === "removed");
    } finally {
      events.close();
    }
  });

  it("leaveAfterMs empties the call and endAfterMs ends it, both counted from admission", async () => {
    const code = newCode();
    await configure(code, { admit: "open", leaveAfterMs: 50, endAfterMs: 300 });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      const alone = await events.waitFor("everyone leaving", (v) => v.participants.length === 0);
      expect(alone.attendee.state).toBe("in_call");
      await events.waitFor("the end", (v) => v.attendee.state === "ended");
    } finally {
      events.close();
    }
    expect((await state(code)).ended).toBe(true);
  });

  it("tells a Leave from a page that went away (leftBy)", async () => {
    const code = newCode();
    await configure(code, { admit: "open", participants: 1 });
    const leaving = await join(code, "Leaving Bot");
    const vanishing = await join(code, "Vanishing Bot");
    const leavingEvents = await EventStream.open(code, leaving.id);
    const vanishingEvents = await EventStream.open(code, vanishing.id);
    try {
      await leavingEvents.waitFor("the call", (v) => v.attendee.state === "in_call");
      await vanishingEvents.waitFor("the call", (v) => v.attendee.state === "in_call");
      expect((await call("POST", attendees(code, `/${leaving.id}/leave`))).status).toBe(200);
      await leavingEvents.ended();
      vanishingEvents.close();
      await vi.waitFor(
        async () => {
          const leftBy = (await state(code)).attendees.map((a) => [a.name, a.state, a.leftBy]);
          expect(leftBy).toEqual([
            ["Leaving Bot", "left", "leave"],
            ["Vanishing Bot", "left", "page-gone"],
          ]);
        },
        { timeout: 5_000 },
      );
    } finally {
      leavingEvents.close();
      vanishingEvents.close();
    }
  });

  it("shows other attendees in the call, without media", async () => {
    const code = newCode();
    await configure(code, { admit: "open", participants: 1 });
    const first = await join(code, "First Bot");
    await join(code, "Second Bot");
    const events = await EventStream.open(code, first.id);
    try {
      const view = await events.waitFor("the call", (v) => v.attendee.state === "in_call");
      expect(view.participants).toEqual([
        { id: "p-1", name: "Alice Example", index: 0, media: "speech" },
        { id: "a-2", name: "Second Bot", index: null },
      ]);
    } finally {
      events.close();
    }
  });

  it("tells the page what remote participants send: media=sync for the A/V sync beacon", async () => {
    const code = newCode();
    await configure(code, { admit: "open", participants: 1, media: "sync" });
    const attendee = await join(code, "Sync Bot");
    const events = await EventStream.open(code, attendee.id);
    try {
      const view = await events.waitFor("the call", (v) => v.attendee.state === "in_call");
      expect(view.participants).toEqual([{ id: "p-1", name: "Alice Example", index: 0, media: "sync" }]);
    } finally {
      events.close();
    }
    const bad = await call("PUT", control(newCode()), { media: "loud" });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toContain("media: Invalid option");
  });

  it("leave: the page's Leave call marks the attendee left", async () => {
    const code = newCode();
    await configure(code, { admit: "open" });
    const attendee = await join(code);
    const left = await call("POST", attendees(code, `/${attendee.id}/leave`));
    expect(left).toEqual({ status: 200, json: { id: attendee.id, name: "Meetbot", state: "left" } });
    expect((await state(code)).attendees[0]?.finishedAt).toEqual(expect.any(String));
  });

  it("a page that goes away (its event stream closes) has left", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    await events.waitFor("the lobby", (v) => v.attendee.state === "lobby");
    events.close();
    await waitForState(code, "the attendee to leave", (s) => s.attendees[0]?.state === "left");
  });

  it("ends the event streams of a forgotten meeting", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      await events.waitFor("the lobby", (v) => v.attendee.state === "lobby");
      expect((await call("DELETE", control(code))).status).toBe(204);
      await events.ended();
    } finally {
      events.close();
    }
  });

  it("joining an ended meeting lands on the end at once", async () => {
    const code = newCode();
    await configure(code, { admit: "open" });
    await call("POST", control(code, "/end"));
    expect((await join(code)).state).toBe("ended");
  });
});

describe("control API: error cases on a known meeting", () => {
  it("answers 409 when the meeting is not in a state that allows the call", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });
    const nobodyWaiting = await call("POST", control(code, "/admit"));
    expect(nobodyWaiting.status).toBe(409);
    expect(nobodyWaiting.json.detail).toBe(`no attendee is waiting in the lobby in meeting ${code}`);
    expect((await call("POST", control(code, "/remove"))).status).toBe(409);

    expect((await call("POST", control(code, "/end"))).status).toBe(200);
    const again = await call("POST", control(code, "/end"));
    expect(again).toEqual({ status: 409, json: { detail: `meeting ${code} has already ended` } });
    const lateGuest = await call("POST", control(code, "/participants"), { name: "Late" });
    expect(lateGuest.status).toBe(409);
  });

  it("answers 404 for an unknown attendee or participant and 400 for bad bodies", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });

    const ghost = await call("POST", control(code, "/admit"), { attendeeId: "a-9" });
    expect(ghost).toEqual({ status: 404, json: { detail: `meeting ${code} has no attendee a-9` } });
    const nobody = await call("DELETE", control(code, "/participants/p-9"));
    expect(nobody).toEqual({ status: 404, json: { detail: `meeting ${code} has no participant p-9` } });
    expect((await call("GET", attendees(code, "/a-9/events"))).status).toBe(404);

    const noName = await call("POST", control(code, "/participants"), { name: "  " });
    expect(noName.status).toBe(400);
    expect(noName.json.detail).toBe("invalid participant: name: a name is required");
    const extra = await call("POST", control(code, "/admit"), { attendee: "a-1" });
    expect(extra.status).toBe(400);
    expect((await call("POST", attendees(code), {})).status).toBe(400);

    const malformed = await fetch(`${host.url}${control(code)}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).detail).toEqual(expect.any(String));
  });

  it("refuses attendees on a dead-end page", async () => {
    const code = newCode();
    await configure(code, { page: "sign_in" });
    const refused = await call("POST", attendees(code), { name: "Meetbot" });
    expect(refused.status).toBe(409);
    expect(refused.json.detail).toContain("'sign_in' page");
  });
});

describe("scripted meetings: participants read lines", () => {
  const line = (participant: string, text: string) => ({ participant, text });

  it("rejects a script naming someone not in the meeting, too many lines or too long a line", async () => {
    const code = newCode();
    const stranger = await call("PUT", control(code), {
      participants: 2,
      script: [line("Alice Example", "Hello"), line("Carol Example", "Hi")],
    });
    expect(stranger.status).toBe(400);
    expect(stranger.json.detail).toBe(
      "invalid scenario: script.1.participant: 'Carol Example' is not one of the meeting's participants (Alice Example, Bob Example)",
    );

    const tooMany = await call("PUT", control(code), {
      script: Array.from({ length: 51 }, () => line("Alice Example", "Hello")),
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.detail).toContain("script: must hold at most 50 lines");

    const tooLong = await call("PUT", control(code), { script: [line("Bob Example", "a".repeat(301))] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.detail).toContain("script.0.text: must be at most 300 characters");

    const withBeacon = await call("PUT", control(code), {
      media: "sync",
      script: [line("Bob Example", "Hi")],
    });
    expect(withBeacon.status).toBe(400);
    expect(withBeacon.json.detail).toContain("media: must be speech (the default) with a script");

    const noScript = await call("PUT", control(code), { endAfterScript: true, scriptStartAfterMs: 5 });
    expect(noScript.status).toBe(400);
    expect(noScript.json.detail).toContain("endAfterScript: needs a script");
    expect(noScript.json.detail).toContain("scriptStartAfterMs: needs a script");
    expect((await call("GET", control(code))).status).toBe(404);
  });

  it("reads the script from a query string: Name:text lines joined by |, or a JSON list", async () => {
    const code = newCode();
    const script = "Alice Example:Agenda: first, the report|Bob Example: Fine by me";
    const page = await fetch(
      `${host.url}/meet/${code}?script=${encodeURIComponent(script)}&endAfterScript=true`,
    );
    expect(page.status).toBe(200);
    expect((await state(code)).scenario).toMatchObject({
      script: [line("Alice Example", "Agenda: first, the report"), line("Bob Example", "Fine by me")],
      endAfterScript: true,
    });

    const json = newCode();
    const listed = JSON.stringify([line("Bob Example", "Either | or")]);
    expect((await fetch(`${host.url}/meet/${json}?script=${encodeURIComponent(listed)}`)).status).toBe(200);
    expect((await state(json)).scenario.script).toEqual([line("Bob Example", "Either | or")]);

    const stranger = await fetch(
      `${host.url}/meet/${newCode()}?script=${encodeURIComponent("Zed Example:Hi")}`,
    );
    expect(stranger.status).toBe(400);
    expect((await stranger.json()).detail).toContain(
      "script.0.participant: 'Zed Example' is not one of the meeting's participants",
    );
    const noText = await fetch(
      `${host.url}/meet/${newCode()}?script=${encodeURIComponent("Alice Example:Hi|Bob")}`,
    );
    expect(noText.status).toBe(400);
    expect((await noText.json()).detail).toContain("script.1.text");
  });

  it("starts the script when the control API says so, once; a meeting without one refuses (409)", async () => {
    const code = newCode();
    await configure(code, {
      admit: "open",
      script: [line("Alice Example", "Now, not in a day")],
      scriptStartAfterMs: 86_400_000,
    });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      const started = await call("POST", control(code, "/script/start"));
      expect(started.status).toBe(200);
      await events.waitFor("the line on air", (v) => v.speech?.line === 0);
      // A second start does not read the script again.
      expect((await call("POST", control(code, "/script/start"))).status).toBe(200);
      await events.waitFor("the pause after it", (v) => v.speech === null);
    } finally {
      events.close();
    }
    expect((await state(code)).spoken.map((l: { text: string }) => l.text)).toEqual(["Now, not in a day"]);

    const plain = newCode();
    await configure(plain, { admit: "open" });
    const refused = await call("POST", control(plain, "/script/start"));
    expect(refused.status).toBe(409);
    expect(refused.json.detail).toContain("no script");
  });

  it("puts the lines on air one at a time, reports them as spoken, and ends after the script", async () => {
    const code = newCode();
    const configured = await configure(code, {
      admit: "open",
      script: [line("Alice Example", "I will send the report tomorrow"), line("Bob Example", "Thank you")],
      scriptStartAfterMs: 0,
      endAfterScript: true,
    });
    expect(configured.spoken).toEqual([]);
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      const first = await events.waitFor("Alice's line", (v) => v.speech?.line === 0);
      expect(first.participants.map((p) => p.media)).toEqual(["script", "script"]);
      expect(first.speech).toEqual({
        participantId: "p-1",
        line: 0,
        url: expect.stringMatching(/^\/static\/speech\/[0-9a-f]{32}\.wav$/),
      });
      const pause = await events.waitFor("the pause after it", (v) => v.speech === null);
      expect(pause.attendee.state).toBe("in_call");
      const second = await events.waitFor("Bob's line", (v) => v.speech?.line === 1);
      expect(second.speech?.participantId).toBe("p-2");
      expect(second.speech?.url).not.toBe(first.speech?.url);
      await events.waitFor("the end after the script", (v) => v.attendee.state === "ended");
    } finally {
      events.close();
    }
    const { spoken, ended } = await state(code);
    expect(ended).toBe(true);
    expect(spoken).toEqual([
      {
        line: 0,
        participant: "Alice Example",
        participantId: "p-1",
        text: "I will send the report tomorrow",
        startedAt: expect.any(String),
        endedAt: expect.any(String),
      },
      {
        line: 1,
        participant: "Bob Example",
        participantId: "p-2",
        text: "Thank you",
        startedAt: expect.any(String),
        endedAt: expect.any(String),
      },
    ]);
    const [alice, bob] = spoken.map((s) => ({
      start: Date.parse(s.startedAt),
      end: Date.parse(s.endedAt ?? ""),
    }));
    expect(alice!.end).toBeGreaterThan(alice!.start);
    expect(bob!.start).toBeGreaterThan(alice!.end);
    expect(bob!.end).toBeGreaterThan(bob!.start);
  });

  it("records when an attendee's page played each line (its clock), and refuses a malformed report", async () => {
    const code = newCode();
    await configure(code, {
      admit: "open",
      script: [line("Alice Example", "Hello")],
      scriptStartAfterMs: 60_000,
    });
    const attendee = await join(code);
    const playout = (body: unknown) => call("POST", attendees(code, `/${attendee.id}/playout`), body);
    const at = Date.parse("2026-11-27T10:00:00.000Z");
    expect((await playout({ line: 0, change: "started", at })).status).toBe(200);
    // A finish without its start (a page that reloaded) changes nothing.
    expect((await playout({ line: 3, change: "ended", at: at + 100 })).status).toBe(200);
    const done = await playout({ line: 0, change: "ended", at: at + 1500 });
    const played = [{ line: 0, startedAt: "2026-11-27T10:00:00.000Z", endedAt: "2026-11-27T10:00:01.500Z" }];
    expect(done.json).toEqual({ id: attendee.id, played });
    expect((await state(code)).attendees[0]?.played).toEqual(played);
    for (const bad of [{ line: -1, change: "started", at }, { line: 0, change: "paused", at }, { line: 0 }]) {
      const refused = await playout(bad);
      expect(refused.status, JSON.stringify(bad)).toBe(400);
    }
    const unknown = await call("POST", attendees(code, "/a-99/playout"), { line: 0, change: "started", at });
    expect(unknown.status).toBe(404);
  });

  it("takes a line off air when its reader leaves, and skips the lines of someone gone", async () => {
    const code = newCode();
    await configure(code, {
      admit: "open",
      script: [
        line("Alice Example", "This is a rather long line that will not be finished"),
        line("Bob Example", "Thanks"),
        line("Alice Example", "Never said"),
      ],
      scriptStartAfterMs: 0,
      endAfterScript: true,
    });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    try {
      await events.waitFor("Alice's line", (v) => v.speech?.line === 0);
      await call("DELETE", control(code, "/participants/p-1"));
      const cut = await events.waitFor("Alice gone", (v) => v.participants.length === 1);
      expect(cut.speech).toBeNull();
      await events.waitFor("Bob's line", (v) => v.speech?.line === 1);
      await events.waitFor("the end after the script", (v) => v.attendee.state === "ended");
    } finally {
      events.close();
    }
    const { spoken } = await state(code);
    expect(spoken.map((s) => [s.participantId, s.text])).toEqual([
      ["p-1", "This is a rather long line that will not be finished"],
      ["p-2", "Thanks"],
    ]);
    expect(Date.parse(spoken[0]!.endedAt ?? "")).toBeLessThanOrEqual(Date.parse(spoken[1]!.startedAt));
  });

  it("serves each line as a WAV with speech in it", async () => {
    const code = newCode();
    await configure(code, {
      admit: "open",
      participants: 1,
      script: [line("Alice Example", "We decided to ship on Friday")],
    });
    const attendee = await join(code);
    const events = await EventStream.open(code, attendee.id);
    let url: string;
    try {
      url = (await events.waitFor("the line", (v) => Boolean(v.speech))).speech!.url;
    } finally {
      events.close();
    }
    const response = await fetch(`${host.url}${url}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/wav");
    const wav = Buffer.from(await response.arrayBuffer());
    expect(wav.toString("ascii", 0, 4)).toBe("RIFF");
    expect(wav.toString("ascii", 8, 12)).toBe("WAVE");
    expect(wav.readUInt32LE(24)).toBe(48_000);
    const dir = mkdtempSync(joinPath(tmpdir(), "mock-speech-test-"));
    try {
      writeFileSync(joinPath(dir, "line.wav"), wav);
      const inspection = await inspectRecording(joinPath(dir, "line.wav"));
      expect(inspection.durationSeconds).toBeGreaterThan(1);
      expect(inspection.meanVolumeDb).toBeGreaterThan(-40);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await fetch(`${host.url}/static/speech/${"0".repeat(32)}.wav`)).status).toBe(404);
  });

  it("speaks text with quotes, colons, commas and backslashes from a directory with such a name", async () => {
    const awkward = mkdtempSync(joinPath(tmpdir(), "it's: a [dir], ok; "));
    // Unset again after (an unset TMPDIR restored by assignment becomes the string "undefined").
    vi.stubEnv("TMPDIR", awkward);
    const speech = new SpeechSynthesizer();
    vi.unstubAllEnvs();
    try {
      const plain = await speech.render("Bob said it is fine", "rms");
      const tricky = await speech.render("Bob's note: 'it is fine', he said \\ twice; [really]", "awb");
      expect(plain.durationMs).toBeGreaterThan(500);
      expect(tricky.durationMs).toBeGreaterThan(plain.durationMs);
    } finally {
      speech.close();
      rmSync(awkward, { recursive: true, force: true });
    }
  });
});

describe("the attendee's own microphone and camera", () => {
  const devicesPath = (code: string, suffix: string) => attendees(code, `/a-1${suffix}`);

  /** Joins with the devices the pre-join form had on; the meeting admits at once unless told. */
  async function joinWithDevices(code: string, devices: { microphone: boolean; camera: boolean }) {
    const { status, json } = await call("POST", attendees(code), { name: "Meetbot", devices });
    expect(status).toBe(201);
    return json;
  }

  /** A raw POST, as the page sends sound and pictures. */
  async function postBytes(path: string, type: string, body: Uint8Array) {
    const response = await fetch(`${host.url}${path}`, {
      method: "POST",
      headers: { "content-type": type },
      body: Buffer.from(body),
    });
    return { status: response.status, text: await response.text() };
  }

  async function getBytes(path: string) {
    const response = await fetch(`${host.url}${path}`);
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      body: Buffer.from(await response.arrayBuffer()),
    };
  }

  /** `seconds` of a 1 kHz sine at 16 kHz with amplitude 0.5 (an RMS of about -9 dBFS). */
  function sine(seconds: number): Int16Array {
    const samples = new Int16Array(Math.round(seconds * 16_000));
    for (let i = 0; i < samples.length; i++)
      samples[i] = Math.round(16384 * Math.sin((2 * Math.PI * 1000 * i) / 16_000));
    return samples;
  }

  const bytesOf = (samples: Int16Array) =>
    new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);

  it("keeps the pre-join choice, lays the sound on the call's clock, 100 ms levels and heard.wav with zeros elsewhere", async () => {
    const code = newCode();
    await configure(code, { admit: "open" });
    await joinWithDevices(code, { microphone: true, camera: false });
    const [before] = (await state(code)).attendees;
    expect(before).toMatchObject({
      mic: { muted: false, changes: [{ muted: false, by: "self" }] },
      camera: { on: false, color: null, changes: [{ on: false }] },
      heard: { levels: [] },
    });

    // 300 ms of tone one second into the call, in two chunks that arrive in the wrong order.
    const runStartMs = Date.parse(before?.admittedAt ?? "") + 1000;
    const tone = sine(0.3);
    const heard = (offset: number) => devicesPath(code, `/heard?runStartMs=${runStartMs}&offset=${offset}`);
    const octets = "application/octet-stream";
    expect((await postBytes(heard(2400), octets, bytesOf(tone.subarray(2400)))).status).toBe(204);
    expect((await postBytes(heard(0), octets, bytesOf(tone.subarray(0, 2400)))).status).toBe(204);

    const [after] = (await state(code)).attendees;
    expect(after?.heard.levels.map((level) => level.atMs)).toEqual([1000, 1100, 1200]);
    for (const level of after?.heard.levels ?? []) expect(level.dbfs).toBeCloseTo(-9, 0);
    expect(after?.heard.seconds).toBeGreaterThanOrEqual(1.3);

    const wav = await getBytes(control(code, "/attendees/a-1/heard.wav"));
    expect(wav.status).toBe(200);
    expect(wav.type).toBe("audio/wav");
    expect(wav.body.readUInt32LE(24)).toBe(16_000);
    const samples = new Int16Array(Math.floor((wav.body.length - 44) / 2));
    for (let i = 0; i < samples.length; i++) samples[i] = wav.body.readInt16LE(44 + 2 * i);
    expect(samples.subarray(0, 16_000).every((sample) => sample === 0)).toBe(true);
    expect([...samples.subarray(16_000, 16_000 + tone.length)]).toEqual([...tone]);

    // Malformed chunks are refused; once muted, sound is refused as a platform takes none.
    expect((await postBytes(heard(0), octets, new Uint8Array(3))).status).toBe(400);
    expect((await postBytes(devicesPath(code, "/heard?offset=0"), octets, new Uint8Array(2))).status).toBe(
      400,
    );
    const muted = await call("POST", devicesPath(code, "/microphone"), { muted: true });
    expect(muted.json).toMatchObject({ microphone: { muted: true, by: "self" }, hostMutes: 0 });
    expect((await postBytes(heard(4800), octets, bytesOf(tone))).status).toBe(409);
  });

  it("the host mutes the attendee: recorded as the host's, pushed to the page; allowUnmute=false keeps it muted", async () => {
    const code = newCode();
    const bad = await call("PUT", control(code), { allowUnmute: "maybe" });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toContain("allowUnmute: must be true or false");
    const nobody = await call("POST", control(code, "/mute-attendee"));
    expect(nobody.status).toBe(404);

    await configure(code, { admit: "open", allowUnmute: false });
    expect((await call("POST", control(code, "/mute-attendee"))).status).toBe(409);
    await joinWithDevices(code, { microphone: true, camera: false });
    const events = await EventStream.open(code, "a-1");
    try {
      const inCall = await events.waitFor("the call", (v) => v.attendee.state === "in_call");
      expect(inCall.devices).toEqual({
        microphone: { muted: false, by: "self" },
        camera: { on: false },
        hostMutes: 0,
        hostName: "Alice Example",
        allowUnmute: false,
      });
      const { status, json } = await call("POST", control(code, "/mute-attendee"), { attendeeId: "a-1" });
      expect(status).toBe(200);
      expect(json.attendees[0]?.mic.changes.at(-1)).toMatchObject({ muted: true, by: "host" });
      const mutedView = await events.waitFor("the host's mute", (v) => v.devices?.hostMutes === 1);
      expect(mutedView.devices?.microphone).toEqual({ muted: true, by: "host" });
      // While the page follows (closing the stream would leave the call): the unmute is refused.
      const unmute = await call("POST", devicesPath(code, "/microphone"), { muted: false });
      expect(unmute.status).toBe(409);
      expect(unmute.json.detail).toBe("the host muted this attendee and does not allow unmuting");
      expect((await state(code)).attendees[0]?.mic.changes.map((c) => c.by)).toEqual(["self", "host"]);
    } finally {
      events.close();
    }
    expect((await call("POST", control(code, "/mute-attendee"), { attendeeId: "a-9" })).status).toBe(404);
  });

  it("takes colours and pictures while the camera is on; camera.png is a 404 before any, heard.wav a 409 before the call", async () => {
    const code = newCode();
    await configure(code, { admit: "manual" });
    await joinWithDevices(code, { microphone: false, camera: true });
    expect((await getBytes(control(code, "/attendees/a-1/heard.wav"))).status).toBe(409);
    expect((await getBytes(control(code, "/attendees/a-1/camera.png"))).status).toBe(404);
    expect((await call("POST", devicesPath(code, "/camera/color"), { r: 1, g: 2, b: 3 })).status).toBe(409);
    await call("POST", control(code, "/admit"));

    expect((await call("POST", devicesPath(code, "/camera/color"), { r: 250, g: 5, b: 5 })).status).toBe(204);
    expect((await call("POST", devicesPath(code, "/camera/color"), { r: 300, g: 5, b: 5 })).status).toBe(400);
    expect((await state(code)).attendees[0]?.camera).toMatchObject({
      on: true,
      color: { r: 250, g: 5, b: 5 },
    });

    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    expect((await postBytes(devicesPath(code, "/camera/png"), "image/png", png)).status).toBe(204);
    expect((await postBytes(devicesPath(code, "/camera/png"), "image/png", new Uint8Array(9))).status).toBe(
      400,
    );
    const picture = await getBytes(control(code, "/attendees/a-1/camera.png"));
    expect(picture).toMatchObject({ status: 200, type: "image/png" });
    expect(picture.body.equals(png)).toBe(true);

    const off = await call("POST", devicesPath(code, "/camera"), { on: false });
    expect(off.json).toMatchObject({ camera: { on: false } });
    expect((await state(code)).attendees[0]?.camera).toMatchObject({
      on: false,
      color: null,
      changes: [{ on: true }, { on: false }],
    });
    expect((await call("POST", devicesPath(code, "/camera/color"), { r: 1, g: 2, b: 3 })).status).toBe(409);
  });
});
