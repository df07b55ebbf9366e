import { describe, expect, it } from "vitest";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { teamsAdapter } from "../../platforms/teams/index.js";
import { isOnTop, placementOf } from "../../platforms/variants.js";
import { AUDIO_ONLY_SCREEN } from "../../src/core/bot-config.js";
import type { Page } from "playwright";
import {
  captionEntries,
  collectNotes,
  expectCaptionGrew,
  expectPictureStops,
  host,
  page,
  snapshotOf,
  text,
  useMockBrowser,
  WAIT,
  watchCaptions,
} from "../helpers/mock-browser.js";

const turnOffTeamsIncomingVideo = teamsAdapter.live!.turnOffIncomingVideo!;

// The hooks as real-Teams bots use them (see docs/notes/platform-hooks.md).
const JOIN_ON_WEB = 'button[data-tid="joinOnWeb"]';
const NAME_INPUT = 'input[data-tid="prejoin-display-name-input"]';
const MIC_SWITCH = '[data-tid="toggle-mute"]';
const CAMERA_SWITCH = '[data-tid="toggle-video"]';
const JOIN_NOW = '[data-tid="prejoin-join-button"]';
const HANGUP = "#hangup-button";
const PEOPLE_BUTTON = "#roster-button";
const ROSTER_ITEMS = '[aria-label="People"] [role="tree"] [data-tid^="participantsInCall-"]';
const TILES = '[data-cid="calling-participant-stream"]';
const NO_AV_TITLE = "Are you sure you don't want audio or video?";
const NO_AV_CONTINUE = "Continue without audio or video";

let idCounter = 0;

const { control } = useMockBrowser("teams");

/** A fresh meeting id in the mock's format (10-64 letters and digits). */
function newId(): string {
  idCounter += 1;
  return `MockTeams${String(idCounter).padStart(4, "0")}`;
}

/** A scheduled meeting's join link on the mock host, with scenario parameters after the context. */
function joinLink(id: string, scenario = ""): string {
  const context = encodeURIComponent(JSON.stringify({ Tid: "tenant-1", Oid: "organizer-1" }));
  return `${host.url}/l/meetup-join/19%3ameeting_${id}%40thread.v2/0?context=${context}${scenario ? `&${scenario}` : ""}`;
}

const meetingState = (id: string): Promise<MeetingState> => control("GET", id);
const count = (selector: string) => page.locator(selector).count();

/** The adapter's reading of the page, exactly as the runner's watcher computes it in the page. */
const snapshot = (selfName?: string) => snapshotOf(teamsAdapter, selfName);

/** From the link to the pre-join form, as a person does it. */
async function openPrejoin(id: string, scenario = "") {
  await page.goto(joinLink(id, scenario));
  await page.locator(JOIN_ON_WEB).click();
  await page.locator(NAME_INPUT).waitFor(WAIT);
}

/** Type the name, switch camera and microphone off, Join now, and confirm the modal. */
async function joinWithoutDevices(name = "Meetbot") {
  await page.locator(NAME_INPUT).fill(name);
  await page.locator(CAMERA_SWITCH).click();
  await page.locator(MIC_SWITCH).click();
  await page.locator(JOIN_NOW).click();
  await page.getByRole("button", { name: NO_AV_CONTINUE, exact: true }).click();
}

async function toLobby(id: string, name = "Meetbot") {
  await control("PUT", id, "", { admit: "manual" });
  await openPrejoin(id);
  await joinWithoutDevices(name);
  await text("Someone will let you in shortly").waitFor(WAIT);
}

async function toCall(id: string, name = "Meetbot") {
  await toLobby(id, name);
  await control("POST", id, "/admit");
  await page.locator(PEOPLE_BUTTON).waitFor(WAIT);
}

/** Roster entries as [id suffix, title name, full text]. */
async function rosterEntries(): Promise<string[][]> {
  return page
    .locator(ROSTER_ITEMS)
    .evaluateAll((nodes) =>
      nodes.map((n) => [
        (n.getAttribute("data-tid") ?? "").replace("participantsInCall-", ""),
        n.querySelector("span[title]")?.getAttribute("title") ?? "",
        (n.textContent ?? "").trim(),
      ]),
    );
}

/** <audio> elements playing a participant's stream that a listener would hear. */
const audibleAudio = () =>
  page.evaluate(
    () =>
      [...document.querySelectorAll("audio")].filter((a) => a.srcObject !== null && !a.muted && !a.paused)
        .length,
  );

describe("launcher and pre-join", () => {
  it("the join link opens the launcher; Continue on this browser opens the web client with the link in its fragment", async () => {
    const id = newId();
    await page.goto(joinLink(id, "admit=manual"));
    const onWeb = page.locator(JOIN_ON_WEB);
    expect(await onWeb.textContent()).toBe("Continue on this browser");
    expect(await count(NAME_INPUT)).toBe(0);
    expect((await snapshot()).phase).toBe("prejoin");

    await onWeb.click();
    await page.locator(NAME_INPUT).waitFor(WAIT);
    const url = new URL(page.url());
    expect(url.pathname).toBe("/v2/");
    expect(url.searchParams.get("meetingjoin")).toBe("true");
    expect(url.hash).toMatch(
      new RegExp(`^#/l/meetup-join/19%3ameeting_${id}%40thread.v2/0\\?context=.*&anon=true$`),
    );
    // The web client configured the meeting from the link's query.
    expect((await meetingState(id)).scenario.admit).toBe("manual");
  });

  it("has the real pre-join hooks: name input, device switches, audio options, Join now", async () => {
    await openPrejoin(newId());
    expect(await page.locator(NAME_INPUT).getAttribute("placeholder")).toBe("Type your name");
    for (const selector of [MIC_SWITCH, CAMERA_SWITCH]) {
      const toggle = page.locator(selector);
      expect(await toggle.getAttribute("role")).toBe("switch");
      expect(await toggle.getAttribute("aria-checked")).toBe("true");
      await toggle.click();
      expect(await toggle.getAttribute("aria-checked")).toBe("false");
      expect(await toggle.isChecked()).toBe(false);
    }
    expect(await page.getByRole("radio", { name: /^Computer audio/ }).isChecked()).toBe(true);
    expect(await page.getByRole("radio", { name: /^Don't use audio/ }).isChecked()).toBe(false);
    // As on the real site, there is nothing to join before a name is typed.
    const join = page.locator(JOIN_NOW);
    expect(await join.textContent()).toBe("Join now");
    expect(await join.isDisabled()).toBe(true);
    await page.locator(NAME_INPUT).fill("Meetbot");
    expect(await join.isEnabled()).toBe(true);
    expect(await count(HANGUP)).toBe(0);
    expect((await snapshot()).phase).toBe("prejoin");
  });

  it("asks 'Are you sure you don't want audio or video?' only with camera and microphone off", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual" });
    await openPrejoin(id);
    await page.locator(NAME_INPUT).fill("Meetbot");
    await page.locator(CAMERA_SWITCH).click();
    await page.locator(MIC_SWITCH).click();
    await page.locator(JOIN_NOW).click();
    await text(NO_AV_TITLE).waitFor(WAIT);
    expect((await meetingState(id)).attendees).toEqual([]);
    // A modal: the form behind it takes no click until it is answered.
    expect(await isOnTop(page.locator(JOIN_NOW))).toBe(false);

    await page.getByRole("button", { name: "Go back" }).click();
    expect(await text(NO_AV_TITLE).count()).toBe(0);
    // Camera back on: no question asked.
    await page.locator(CAMERA_SWITCH).click();
    await page.locator(JOIN_NOW).click();
    await text("Someone will let you in shortly").waitFor(WAIT);
    expect(await text(NO_AV_TITLE).count()).toBe(0);
  });

  it("serves /meet/<numeric id>?p= links too, beside the mock Google Meet's /meet/<code>", async () => {
    await page.goto(`${host.url}/meet/9384756102938?p=Xy7pQ2&admit=open`);
    await page.locator(JOIN_ON_WEB).click();
    await page.locator(NAME_INPUT).waitFor(WAIT);
    expect(new URL(page.url()).hash).toBe("#/meet/9384756102938?p=Xy7pQ2&admit=open&anon=true");
    expect((await meetingState("9384756102938")).scenario.admit).toBe("open");

    await page.goto(`${host.url}/meet/abc-defg-hij`);
    await page.locator('input[aria-label="Your name"]').waitFor(WAIT);
    expect(await count(JOIN_ON_WEB)).toBe(0);
  });
});

describe("lobby and call", () => {
  it("the lobby keeps the frozen form and shows hang-up, but no People, roster or tiles", async () => {
    const id = newId();
    await toLobby(id, "Note Taker");
    expect(await page.locator(JOIN_NOW).isDisabled()).toBe(true);
    expect(await count(HANGUP)).toBe(1);
    expect(await page.locator(HANGUP).getAttribute("aria-label")).toBe("Leave (Ctrl+Shift+H)");
    expect(await count(PEOPLE_BUTTON)).toBe(0);
    expect(await count('[role="tree"]')).toBe(0);
    expect(await count(TILES)).toBe(0);
    expect((await meetingState(id)).attendees).toMatchObject([{ name: "Note Taker", state: "lobby" }]);
    // Hang-up alone does not make it a call.
    expect((await snapshot("Note Taker")).phase).toBe("lobby");
  });

  it("admission brings the toolbar, the roster tree with the user marked (You), tiles and a harmless alert", async () => {
    const id = newId();
    await toCall(id, "Note Taker");
    expect(await page.locator('button[data-tid="hangup-main-btn"]').getAttribute("aria-label")).toBe(
      "Leave (Ctrl+Shift+H)",
    );
    await expect.poll(rosterEntries, WAIT).toEqual([
      ["a-1", "Note Taker", "Note Taker (Unverified) (You)"],
      ["p-1", "Alice Example", "Alice Example"],
      ["p-2", "Bob Example", "Bob Example"],
    ]);
    await expect
      .poll(() => page.locator(`${TILES} [data-tid="participant-info-nametag"]`).allTextContents(), WAIT)
      .toEqual(["Alice Example", "Bob Example"]);
    expect(
      await page.locator(TILES).evaluateAll((tiles) => tiles.map((t) => t.getAttribute("data-tid"))),
    ).toEqual(["p-1", "p-2"]);
    expect(await page.locator('[role="alert"]').textContent()).toContain("Recording has started");
    expect(await text("Someone will let you in shortly").count()).toBe(0);

    // The adapter reads the call, without the bot itself, and is not fooled by the alert.
    const snap = await snapshot("Note Taker");
    expect(snap.phase).toBe("in_call");
    expect(snap.participants).toEqual([
      { id: "p-1", name: "Alice Example" },
      { id: "p-2", name: "Bob Example" },
    ]);

    // The roster is always in the DOM; the People button shows and hides its panel.
    const panel = page.locator('[aria-label="People"][role="complementary"]');
    expect(await panel.isVisible()).toBe(false);
    await page.locator(PEOPLE_BUTTON).click();
    expect(await panel.isVisible()).toBe(true);
    await page.locator(PEOPLE_BUTTON).click();
    expect(await panel.isVisible()).toBe(false);
    expect((await snapshot("Note Taker")).participants).toHaveLength(2);

    // The real client may not render the roster while its panel is closed: the adapter then
    // names the others from the stage, with the same ids.
    await page.evaluate(() => document.querySelector('[aria-label="People"] [role="tree"]')?.remove());
    const fromStage = await snapshot("Note Taker");
    expect(fromStage.phase).toBe("in_call");
    expect(fromStage.participants).toEqual(snap.participants);
  });

  it("someone who takes the bot's name, or calls themself '(You)', is listed and heard; the bot, tagged (You) and in the self view, never", async () => {
    const id = newId();
    await toCall(id, "Note Taker");
    await control("POST", id, "/participants", { name: "Note Taker" });
    await control("POST", id, "/participants", { name: "Note Taker (You)" });
    await expect.poll(rosterEntries, WAIT).toEqual([
      ["a-1", "Note Taker", "Note Taker (Unverified) (You)"],
      ["p-1", "Alice Example", "Alice Example"],
      ["p-2", "Bob Example", "Bob Example"],
      ["p-3", "Note Taker", "Note Taker"],
      ["p-4", "Note Taker (You)", "Note Taker (You)"],
    ]);
    // The stage: the user's self view (named like the bot and its namesake), and the others' tiles.
    const selfView = page.locator('[data-tid="myself-video"]');
    expect(await selfView.locator('[data-tid="participant-info-nametag"]').textContent()).toBe("Note Taker");
    expect(
      await page.locator(TILES).evaluateAll((tiles) => tiles.map((t) => t.getAttribute("data-tid"))),
    ).toEqual(["p-1", "p-2", "p-3", "p-4"]);
    const everyone = [
      { id: "p-1", name: "Alice Example" },
      { id: "p-2", name: "Bob Example" },
      { id: "p-3", name: "Note Taker" },
      { id: "p-4", name: "Note Taker (You)" },
    ];
    expect((await snapshot("Note Taker")).participants).toEqual(everyone);
    for (const pid of ["p-3", "p-4"]) {
      await expect.poll(async () => (await snapshot("Note Taker")).speakers?.includes(pid), WAIT).toBe(true);
    }
    // With no roster rendered, from the stage: the same people, the self view left out.
    await page.evaluate(() => document.querySelector('[aria-label="People"] [role="tree"]')?.remove());
    expect((await snapshot("Note Taker")).participants).toEqual(everyone);
  });

  it("participants added and removed through the control API come and go", async () => {
    const id = newId();
    await toCall(id);
    const zed = await control("POST", id, "/participants", { name: "Zed Newcomer" });
    await expect
      .poll(async () => (await snapshot()).participants.map((p) => p.name), WAIT)
      .toEqual(["Alice Example", "Bob Example", "Zed Newcomer"]);
    await control("DELETE", id, `/participants/${zed.id}`);
    await control("DELETE", id, "/participants/p-1");
    await expect
      .poll(async () => (await snapshot()).participants, WAIT)
      .toEqual([{ id: "p-2", name: "Bob Example" }]);
    expect(await count(TILES)).toBe(1);
    await expect.poll(audibleAudio, WAIT).toBe(1);
  });

  it("remote participants send moving pictures and sound, and Teams lights the ring of whoever is heard", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", participants: 2 });
    await openPrejoin(id);
    await joinWithoutDevices();
    await page.locator(PEOPLE_BUTTON).waitFor(WAIT);
    await expect.poll(audibleAudio, WAIT).toBe(2);

    const canvas = page.locator(`${TILES}[data-tid="p-1"] canvas`);
    const first = await canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL());
    await expect
      .poll(() => canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL()), WAIT)
      .not.toBe(first);

    // Bursts: each participant is shown speaking at some point and silent at another, and the
    // adapter's speakers follow the ring.
    for (const pid of ["p-1", "p-2"]) {
      const outline = page.locator(`${TILES}[data-tid="${pid}"] [data-tid="voice-level-stream-outline"]`);
      const lit = () => outline.evaluate((o) => o.classList.contains("vdi-frame-occlusion"));
      await expect.poll(lit, WAIT).toBe(true);
      await expect.poll(async () => (await snapshot()).speakers?.includes(pid), WAIT).toBe(true);
      await expect.poll(lit, WAIT).toBe(false);
      await expect.poll(async () => (await snapshot()).speakers?.includes(pid), WAIT).toBe(false);
    }
  });

  it("with Don't use audio the meeting plays no sound (why the bot picks Computer audio)", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", participants: 2 });
    await openPrejoin(id);
    await page.getByRole("radio", { name: /^Don't use audio/ }).check();
    await joinWithoutDevices();
    await expect.poll(() => count(TILES), WAIT).toBe(2);
    await expect.poll(() => page.locator("audio").count(), WAIT).toBe(2);
    expect(await audibleAudio()).toBe(0);
  });
});

describe("outcomes", () => {
  it("deny shows Teams' denial text and no toolbar", async () => {
    const id = newId();
    await toLobby(id);
    await control("POST", id, "/deny");
    await text("Sorry, but you were denied access to the meeting.").waitFor(WAIT);
    expect(await count(HANGUP)).toBe(0);
    expect(await count('[data-tid="calling-retry-cancelbutton"]')).toBe(1);
    expect((await snapshot()).phase).toBe("denied");
  });

  it("remove shows You've been removed from this meeting and stops all media", async () => {
    const id = newId();
    await toCall(id);
    await control("POST", id, "/remove");
    await text("You've been removed from this meeting").waitFor(WAIT);
    expect(await count(HANGUP)).toBe(0);
    expect(await page.locator("audio").count()).toBe(0);
    expect((await snapshot()).phase).toBe("removed");
  });

  it("the host ending the meeting shows The meeting has ended", async () => {
    const id = newId();
    await toCall(id);
    await control("POST", id, "/end");
    await text("The meeting has ended").waitFor(WAIT);
    expect(await count(TILES)).toBe(0);
    expect((await snapshot()).phase).toBe("ended");
  });

  it("hang-up shows You left the meeting and the host sees the attendee left", async () => {
    const id = newId();
    await toCall(id);
    await page.locator(HANGUP).click();
    await text("You left the meeting").waitFor(WAIT);
    expect((await snapshot()).phase).toBe("left");
    await expect.poll(async () => (await meetingState(id)).attendees[0]?.state, WAIT).toBe("left");
  });
});

describe("dead ends (after Continue on this browser, as on the real site)", () => {
  it("an id that is not a Teams meeting id gets the incorrect-URL page and no form", async () => {
    await page.goto(`${host.url}/l/meetup-join/19%3ameeting_short%40thread.v2/0`);
    await page.locator(JOIN_ON_WEB).click();
    await page.getByText("Looks like the meeting URL is incorrect", { exact: false }).waitFor(WAIT);
    expect(await count(NAME_INPUT)).toBe(0);
    expect((await snapshot()).phase).toBe("not_found");
  });

  it("page=not_found shows the same page for a valid id", async () => {
    await page.goto(joinLink(newId(), "page=not_found"));
    await page.locator(JOIN_ON_WEB).click();
    await page.getByText("Looks like the meeting URL is incorrect", { exact: false }).waitFor(WAIT);
    expect(await count(NAME_INPUT)).toBe(0);
  });

  it("page=sign_in shows the verify-your-info wall, then Microsoft's sign-in form", async () => {
    await page.goto(joinLink(newId(), "page=sign_in"));
    await page.locator(JOIN_ON_WEB).click();
    await text("We need to verify your info before you can join").waitFor(WAIT);
    expect(await count(NAME_INPUT)).toBe(0);
    expect((await snapshot()).phase).toBe("sign_in");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator('input[name="loginfmt"]').waitFor(WAIT);
    expect((await snapshot()).phase).toBe("sign_in");
  });

  it("page=blocked shows Teams' captcha", async () => {
    await page.goto(joinLink(newId(), "page=blocked"));
    await page.locator(JOIN_ON_WEB).click();
    await text("Verify you're a real person").waitFor(WAIT);
    expect((await snapshot()).phase).toBe("bot_wall");
  });
});

describe("drifted layouts (ui=, fixtures/teams/ui-variants.ts) and the adapter on them", () => {
  const ROSTER_ITEM = '[data-tid^="participantsInCall-"]';
  const NAME_KEYED_TILES = '[data-stream-type="Video"]';
  const PROMPT = "Select Allow to let Microsoft Teams use your mic and camera";
  const onTop = (selector: string) => isOnTop(page.locator(selector).first());
  const tileKeys = () =>
    page.locator(NAME_KEYED_TILES).evaluateAll((tiles) => tiles.map((t) => t.getAttribute("data-tid")));

  it("teams-roster-closed: no roster until People opens it, outside any 'People' container; name-keyed tiles carry the ring", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", ui: ["teams-roster-closed"] });
    await openPrejoin(id);
    await joinWithoutDevices("Note Taker");
    const people = page.locator('button[aria-label="People"]');
    await people.waitFor(WAIT);
    // The user's own self view first, then the others' tiles keyed by their names.
    await expect.poll(tileKeys, WAIT).toEqual(["myself-video", "Alice Example", "Bob Example"]);
    expect(await count(PEOPLE_BUTTON)).toBe(0);
    expect(await count(ROSTER_ITEM)).toBe(0);
    expect(await count(TILES)).toBe(0);
    // Closed roster: the adapter names the others from the stage meanwhile.
    expect((await snapshot("Note Taker")).participants).toEqual([
      { id: "Alice Example", name: "Alice Example" },
      { id: "Bob Example", name: "Bob Example" },
    ]);

    const { notes, note } = collectNotes();
    await teamsAdapter.afterAdmission?.(page, { note });
    expect(notes).toEqual([["roster", 'opened with button[data-tid="calling-toolbar-people-button"]']]);
    expect(await count(ROSTER_ITEM)).toBe(3);
    expect(await count('[aria-label="People"] [role="tree"]')).toBe(0);
    expect(await count('[aria-label="Participants"] [role="tree"]')).toBe(1);
    const snap = await snapshot("Note Taker");
    expect(snap).toMatchObject({ phase: "in_call" });
    expect(snap.participants).toEqual([
      { id: "p-1", name: "Alice Example" },
      { id: "p-2", name: "Bob Example" },
    ]);
    // The ring of a name-keyed tile is the roster participant's.
    for (const pid of ["p-1", "p-2"]) {
      await expect.poll(async () => (await snapshot("Note Taker")).speakers?.includes(pid), WAIT).toBe(true);
    }
  });

  it("teams-alt-labels: a launcher without joinOnWeb, hang-up by data-inp only, a 'Participants' panel", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", ui: ["teams-alt-labels"] });
    await page.goto(joinLink(id));
    expect(await count(JOIN_ON_WEB)).toBe(0);
    await expect
      .poll(snapshot, WAIT)
      .toMatchObject({ phase: "prejoin", evidence: "launcher.joinOnWebTexts" });
    const { notes, note } = collectNotes();
    await teamsAdapter.join(page, { displayName: "Note Taker", info: { platform: "teams" }, note });
    expect(notes[0]).toEqual(["launcher", '"Join meeting from this browser"']);

    const hangup = page.locator('[data-inp="hangup-button"]');
    await hangup.waitFor(WAIT);
    expect(await hangup.getAttribute("aria-label")).toBe("Leave (Ctrl+Shift+H)");
    expect(await count('#hangup-button, [data-tid="hangup-main-btn"]')).toBe(0);
    expect(await count('[aria-label="People"] [role="tree"]')).toBe(0);
    await expect
      .poll(async () => (await snapshot("Note Taker")).participants.map((p) => p.id), WAIT)
      .toEqual(["p-1", "p-2"]);

    expect(await teamsAdapter.leave(page)).toBeNull();
    await expect.poll(async () => (await meetingState(id)).attendees[0]?.state, WAIT).toBe("left");
  });

  it("teams-dialogs-stacked: the device prompt covers the form, then the no-audio confirmation", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", ui: ["teams-dialogs-stacked"] });
    await openPrejoin(id);
    const dismiss = page
      .getByRole("dialog", { name: "Allow mic and camera" })
      .getByRole("button", { name: "Dismiss" });
    expect(await text(PROMPT).isVisible()).toBe(true);
    expect(await onTop(CAMERA_SWITCH)).toBe(false);
    await dismiss.click();
    expect(await onTop(CAMERA_SWITCH)).toBe(true);

    await page.locator(NAME_INPUT).fill("Meetbot");
    await page.locator(CAMERA_SWITCH).click();
    await page.locator(MIC_SWITCH).click();
    await page.locator(JOIN_NOW).click();
    const proceed = page.getByRole("button", { name: NO_AV_CONTINUE, exact: true });
    expect(await proceed.isVisible()).toBe(true);
    expect(await isOnTop(proceed)).toBe(false);
    expect(await isOnTop(dismiss)).toBe(true);
    await dismiss.click();
    expect(await isOnTop(proceed)).toBe(true);
  });

  it("teams-dialogs-stacked: the adapter's join dismisses the prompt each time it covers what it needs", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", ui: ["teams-dialogs-stacked"] });
    await page.goto(joinLink(id));
    const { notes, note } = collectNotes();
    await teamsAdapter.join(page, { displayName: "Adapter Bot", info: { platform: "teams" }, note });
    await text("Someone will let you in shortly").waitFor(WAIT);
    expect(notes).toEqual([
      ["launcher", 'button[data-tid="joinOnWeb"]'],
      ["overlay", 'dismissed: "Dismiss" #1'],
      ["camera", 'switched off: [data-tid="toggle-video"] (on by aria-checked)'],
      ["microphone", 'switched off: [data-tid="toggle-mute"] (on by aria-checked)'],
      ["audioOption", 'checked "Computer audio"'],
      ["overlay", 'dismissed: "Dismiss" #1'],
      ["noAudioVideoConfirm", 'clicked "Continue without audio or video"'],
    ]);
    expect((await meetingState(id)).attendees).toMatchObject([{ name: "Adapter Bot", state: "lobby" }]);
  });

  it("teams-dialogs-stacked in an audio-only bot's small window: the prompt's Dismiss is below the fold, and the adapter presses it with Enter", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", ui: ["teams-dialogs-stacked"] });
    await page.setViewportSize(AUDIO_ONLY_SCREEN);
    try {
      await page.goto(joinLink(id));
      await page.locator(JOIN_ON_WEB).click();
      const dismiss = page
        .getByRole("dialog", { name: "Allow mic and camera" })
        .getByRole("button", { name: "Dismiss" });
      await dismiss.waitFor(WAIT);
      expect(await placementOf(dismiss)).toBe("outside");
      expect(await placementOf(page.locator(CAMERA_SWITCH).first())).toBe("covered");
      const { notes, note } = collectNotes();
      await teamsAdapter.join(page, { displayName: "Small Bot", info: { platform: "teams" }, note });
      await text("Someone will let you in shortly").waitFor(WAIT);
      expect(notes.filter(([hook]) => hook === "overlay" || hook === "camera")).toEqual([
        ["overlay", 'dismissed: "Dismiss" #1'],
        ["camera", 'switched off: [data-tid="toggle-video"] (on by aria-checked)'],
        ["overlay", 'dismissed: "Dismiss" #1'],
      ]);
      expect((await meetingState(id)).attendees).toMatchObject([{ name: "Small Bot", state: "lobby" }]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 720 });
    }
  });

  it("teams-toasts: a toast sits on Join now once a name is typed, beside a harmless alert", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", ui: ["teams-toasts"] });
    await openPrejoin(id);
    expect(await page.locator('[role="alert"]').textContent()).toBe(PROMPT);
    await page.locator(NAME_INPUT).fill("Meetbot");
    const toast = page.locator('[role="status"]');
    expect(await toast.isVisible()).toBe(true);
    expect(await onTop(JOIN_NOW)).toBe(false);
    await toast.waitFor({ state: "detached", ...WAIT });
    expect(await onTop(JOIN_NOW)).toBe(true);
    expect((await snapshot()).phase).toBe("prejoin");
  });

  it("teams-toasts: in the call a toast covers People while the roster is closed; the adapter opens it past the toast", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", ui: ["teams-toasts"] });
    await page.goto(joinLink(id));
    await teamsAdapter.join(page, { displayName: "Note Taker", info: { platform: "teams" } });
    await page.locator(PEOPLE_BUTTON).waitFor(WAIT);
    await page.locator('[role="status"]').waitFor(WAIT);
    expect(await onTop(PEOPLE_BUTTON)).toBe(false);
    expect(await count(ROSTER_ITEM)).toBe(0);

    const { notes, note } = collectNotes();
    await teamsAdapter.afterAdmission?.(page, { note });
    // Any of the button's variants: which one gets the click depends on when the toast goes.
    expect(notes.at(-1)?.[0]).toBe("roster");
    expect(notes.at(-1)?.[1]).toMatch(
      /^opened with (#roster-button|button\[data-tid="calling-toolbar-people-button"\]|button\[aria-label="People"\])$/,
    );
    await expect.poll(rosterEntries, WAIT).toHaveLength(3);
    expect((await snapshot("Note Taker")).participants.map((p) => p.id)).toEqual(["p-1", "p-2"]);
  });
});

describe("captions and chat (docs/notes/live-meeting.md)", () => {
  const MORE = "#callingButtons-showMoreBtn";
  const WRAPPER = '[data-tid="closed-caption-renderer-wrapper"]';
  const CHAT_BUTTON = "button#chat-button";
  const COMPOSER = '[aria-label="Type a message"]';
  const MESSAGES = '[data-tid="chat-pane-message"]';
  // Short lines keep the test short; six words still show the growth.
  const LINES = [
    { participant: "Alice Example", text: "Please send the report by Friday" },
    // A loaded page plays a line later than the host put it on air, and the next line cuts it
    // short (its caption stays half grown): 3 s apart, the first plays out whole.
    { participant: "Bob Example", text: "We will ship the new version", silenceBeforeMs: 3000 },
  ];
  const menuItem = (target: Page, name: string) =>
    target.locator('[role="menu"] [role^="menuitem"]', { hasText: new RegExp(`^${name}$`) });

  /** From the link into the call (admission open), as `name` or signed in (no name to type). */
  async function joinOpen(target: Page, id: string, name?: string) {
    await target.goto(joinLink(id));
    await target.locator(JOIN_ON_WEB).click();
    await target.locator(JOIN_NOW).waitFor(WAIT);
    if (name) await target.locator(NAME_INPUT).fill(name);
    await target.locator(JOIN_NOW).click();
    await target.locator(PEOPLE_BUTTON).waitFor(WAIT);
  }

  /** Each message in the pane as [author shown on it or null, body, data-mid, own]. */
  const chatPane = (target: Page) =>
    target
      .locator(MESSAGES)
      .evaluateAll((nodes) =>
        nodes.map((n) => [
          n.querySelector('[data-tid="message-author-name"]')?.textContent ?? null,
          n.querySelector('[data-tid="messageBodyContent"]')?.textContent,
          n.getAttribute("data-mid"),
          n.classList.contains("fui-ChatMyMessage"),
        ]),
      );

  it("captions for a guest: More → Captions, an entry per turn growing in place, author and text paired in document order", async () => {
    const id = newId();
    await control("PUT", id, "", {
      admit: "open",
      script: LINES,
      // Started below once captions are on (a fallback only: a loaded machine's join takes seconds).
      scriptStartAfterMs: 60_000,
      captionRewrites: [1],
    });
    await joinOpen(page, id, "Meetbot");
    expect(await count(WRAPPER)).toBe(0);
    await watchCaptions(page, {
      block: ".fui-ChatMessageCompact",
      speaker: '[data-tid="author"]',
      text: '[data-tid="closed-caption-text"]',
    });
    await page.locator(MORE).click();
    expect(await menuItem(page, "Language and speech").count()).toBe(0);
    await menuItem(page, "Captions").click();
    await page.locator(WRAPPER).waitFor(WAIT);
    await control("POST", id, "/script/start");

    // What a bot reads: the leaves in document order, author then text.
    const pairs = () =>
      page
        .locator(`${WRAPPER} [data-tid="author"], ${WRAPPER} [data-tid="closed-caption-text"]`)
        .allTextContents();
    await expect
      .poll(pairs, { timeout: 30_000 })
      .toEqual(LINES.flatMap((line) => [line.participant, line.text]));
    const [alice, bob] = await captionEntries(page);
    expect([alice?.speaker, bob?.speaker]).toEqual(["Alice Example", "Bob Example"]);
    expectCaptionGrew(alice, LINES[0]!.text);
    expectCaptionGrew(bob, LINES[1]!.text, true);
    expect((await meetingState(id)).attendees[0]?.captionsOnAt).toEqual(expect.any(String));
    await page.locator(MORE).click();
    expect(await menuItem(page, "Captions").getAttribute("aria-checked")).toBe("true");
  });

  it("More → Turn off incoming video (the adapter's own step): the tiles stop moving and show name cards; the item turns to Turn on", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", participants: 2 });
    await joinOpen(page, id, "Meetbot");
    const canvas = page.locator(`${TILES} canvas`).first();
    const picture = () => canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL());
    const notes: string[] = [];
    const still = await expectPictureStops(canvas, async () => {
      const reason = await turnOffTeamsIncomingVideo(page, { note: (hook) => notes.push(hook) });
      expect({ reason, notes }).toEqual({ reason: null, notes: ["incomingVideoItem"] });
      expect(await page.getByRole("menu").count()).toBe(0);
    });

    // Off already: the step leaves it off and closes the menu it opened.
    expect(await turnOffTeamsIncomingVideo(page, { note: () => {} })).toBeNull();
    expect(await page.getByRole("menu").count()).toBe(0);
    await page.locator(MORE).click();
    await menuItem(page, "Turn on incoming video").click();
    await expect.poll(picture, WAIT).not.toBe(still);
  });

  it("captions off and no guest chat: the guest's Captions item is disabled, it has no #chat-button, the host refuses its messages", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", captions: "off", anonymousChat: "off" });
    await joinOpen(page, id, "Meetbot");
    await page.locator(MORE).click();
    expect(await menuItem(page, "Captions").getAttribute("aria-disabled")).toBe("true");
    expect(await menuItem(page, "Captions").isDisabled()).toBe(true);
    // What a bot reports as CHAT_UNAVAILABLE.
    expect(await count(CHAT_BUTTON)).toBe(0);
    expect(await count('[role="complementary"][aria-label="Chat"]')).toBe(0);
    const refused = await fetch(`${host.url}/api/meetings/teams/${id}/attendees/a-1/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "let me in" }),
    });
    expect(refused.status).toBe(403);
  });

  it("signed in: Language and speech → Show live captions, and the chat (runs, own messages, 4096), guest chat or not", async () => {
    const id = newId();
    const login = `tia-live-${id}`;
    const accounts = `${host.url}/control/accounts/teams/${login}`;
    await fetch(accounts, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Tia Signed" }),
    });
    const session = await (await fetch(`${accounts}/sessions`, { method: "POST" })).json();
    await control("PUT", id, "", {
      admit: "open",
      anonymousChat: "off",
      chat: [
        { participant: "Alice Example", text: "First from Alice", atMs: 300 },
        { participant: "Alice Example", text: "Second from Alice", atMs: 400 },
      ],
    });
    await page.context().setStorageState(session);
    await joinOpen(page, id);

    await page.locator(MORE).click();
    await menuItem(page, "Language and speech").click();
    await menuItem(page, "Show live captions").click();
    await page.locator(WRAPPER).waitFor(WAIT);
    expect((await meetingState(id)).attendees[0]?.captionsOnAt).toEqual(expect.any(String));
    await page.locator(MORE).click();
    await menuItem(page, "Language and speech").click();
    await menuItem(page, "Hide live captions").click();
    expect(await count(WRAPPER)).toBe(0);

    // The pane holds the messages only while open: Alice's run carries her name once.
    expect(await count(MESSAGES)).toBe(0);
    await page.locator(CHAT_BUTTON).click();
    await expect
      .poll(async () => (await chatPane(page)).map(([author, body]) => [author, body]), WAIT)
      .toEqual([
        ["Alice Example", "First from Alice"],
        [null, "Second from Alice"],
      ]);
    await page.locator(COMPOSER).fill("Hello from Tia");
    await page.locator(COMPOSER).press("Enter");
    await expect.poll(() => page.locator(COMPOSER).innerText(), WAIT).toBe("");
    await expect.poll(() => chatPane(page), WAIT).toHaveLength(3);
    const shown = await chatPane(page);
    expect(shown[2]).toEqual([null, "Hello from Tia", expect.any(String), true]);
    const state = await meetingState(id);
    expect(state.chat.map((m) => [m.id, m.sender, m.senderId, m.text, m.fromAttendee])).toEqual([
      [shown[0]![2], "Alice Example", "p-1", "First from Alice", false],
      [shown[1]![2], "Alice Example", "p-1", "Second from Alice", false],
      [shown[2]![2], "Tia Signed", "a-1", "Hello from Tia", true],
    ]);
    // Closed, the pane's list leaves the DOM; reopened, each message is there once.
    await page.locator(CHAT_BUTTON).click();
    expect(await count(MESSAGES)).toBe(0);
    await page.locator(CHAT_BUTTON).click();
    expect(await chatPane(page)).toEqual(shown);

    await page.locator(COMPOSER).fill("z".repeat(4097));
    expect(await page.locator('button[aria-label="Send"]').isDisabled()).toBe(true);
    await page.locator(COMPOSER).press("Enter");
    expect((await page.locator(COMPOSER).innerText()).length).toBe(4097);
    expect((await meetingState(id)).chat).toHaveLength(3);
  });
});

describe("the adapter's join and leave on the mock", () => {
  it("join clicks through the launcher, mutes, keeps computer audio, confirms the modal and lands in the lobby", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual" });
    await page.goto(joinLink(id));
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "prejoin", evidence: "launcher.joinOnWeb" });
    const { notes, note } = collectNotes();
    await teamsAdapter.join(page, { displayName: "Adapter Bot", info: { platform: "teams" }, note });
    await text("Someone will let you in shortly").waitFor(WAIT);
    // Which variant of each hook it met, in order.
    expect(notes).toEqual([
      ["launcher", 'button[data-tid="joinOnWeb"]'],
      ["camera", 'switched off: [data-tid="toggle-video"] (on by aria-checked)'],
      ["microphone", 'switched off: [data-tid="toggle-mute"] (on by aria-checked)'],
      ["audioOption", 'checked "Computer audio"'],
      ["noAudioVideoConfirm", 'clicked "Continue without audio or video"'],
    ]);
    expect(await snapshot("Adapter Bot")).toMatchObject({
      phase: "lobby",
      evidence: 'texts.lobby "Someone will let you in shortly"',
    });
    expect(await page.getByRole("radio", { name: /^Computer audio/ }).isChecked()).toBe(true);
    expect(await page.locator(MIC_SWITCH).getAttribute("aria-checked")).toBe("false");
    expect(await page.locator(CAMERA_SWITCH).getAttribute("aria-checked")).toBe("false");
    expect((await meetingState(id)).attendees).toMatchObject([{ name: "Adapter Bot", state: "lobby" }]);

    // Leaving from the lobby (the waiting-room timeout) takes the bot out of it.
    expect(await teamsAdapter.leave(page)).toBeNull();
    await expect.poll(async () => (await meetingState(id)).attendees[0]?.state, WAIT).toBe("left");
  });

  it("on a starved page Join now's click lands but times out: the confirmation counts as its effect, so it is asked once", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual" });
    await openPrejoin(id);
    // The page's thread held for longer than a click may take (as on two loaded cores): the click
    // lands, the confirmation opens, and Playwright's click throws all the same.
    await page.locator(JOIN_NOW).evaluate((join) =>
      join.addEventListener("click", () => {
        const until = performance.now() + 2500;
        while (performance.now() < until);
      }),
    );
    const { notes, note } = collectNotes();
    await teamsAdapter.join(page, { displayName: "Starved Bot", info: { platform: "teams" }, note });
    await text("Someone will let you in shortly").waitFor(WAIT);
    expect(notes.at(-1)).toEqual(["noAudioVideoConfirm", 'clicked "Continue without audio or video"']);
    expect(await text(NO_AV_TITLE).count()).toBe(0);
    expect((await meetingState(id)).attendees).toMatchObject([{ name: "Starved Bot", state: "lobby" }]);
  });

  it("join returns without error on a dead end, leaving the verdict to the snapshot", async () => {
    await page.goto(joinLink(newId(), "page=sign_in"));
    const { notes, note } = collectNotes();
    await teamsAdapter.join(page, { displayName: "Adapter Bot", info: { platform: "teams" }, note });
    expect(notes).toEqual([["launcher", 'button[data-tid="joinOnWeb"]']]);
    expect(await snapshot()).toMatchObject({
      phase: "sign_in",
      evidence: 'texts.signIn "We need to verify your info before you can join"',
    });
  });
});
