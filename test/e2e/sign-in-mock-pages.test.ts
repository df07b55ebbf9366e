import { describe, expect, it } from "vitest";
import type { AccountState } from "../../fixtures/host/accounts.js";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import type { PlatformAdapter } from "../../platforms/adapter.js";
import { meetAdapter } from "../../platforms/meet/index.js";
import { teamsAdapter } from "../../platforms/teams/index.js";
import { zoomAdapter } from "../../platforms/zoom/index.js";
import type { Platform, StorageState } from "../../src/core/index.js";
import { host, page, snapshotOf, useMockBrowser, WAIT } from "../helpers/mock-browser.js";

/**
 * The mock platforms of 2026 (fixtures/README.md, "Accounts and walls"): sign-in pages that set
 * each platform's session cookie, signed-in pre-joins, the walls for anonymous guests and bots,
 * Teams' lobby for unidentified bots, session rotation and expiry, Meet's "Switch here".
 */

useMockBrowser("google");

let counter = 0;
const fresh = (prefix: string) => `${prefix}${++counter}`;
const letters = (n: number) =>
  Array.from({ length: 4 }, (_, i) => String.fromCharCode(97 + (Math.floor(n / 26 ** i) % 26))).join("");
const meetCode = () => `sig-${letters(++counter)}-zzz`;
const zoomId = () => `5550000${String(++counter).padStart(4, "0")}`;
const teamsId = () => `SignInTeams${String(++counter).padStart(4, "0")}`;
const teamsLink = (id: string, extra = "") => {
  const context = encodeURIComponent(JSON.stringify({ Tid: "tenant-1", Oid: "organizer-1" }));
  return `${host.url}/l/meetup-join/19%3ameeting_${id}%40thread.v2/0?context=${context}${extra}`;
};

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${host.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.ok, `${method} ${path}: ${response.status}`).toBe(true);
  return response.status === 204 ? null : response.json();
}
const configure = (platform: Platform, id: string, scenario: object) =>
  call("PUT", `/control/meetings/${platform}/${id}`, scenario) as Promise<MeetingState>;
const meeting = (platform: Platform, id: string) =>
  call("GET", `/control/meetings/${platform}/${id}`) as Promise<MeetingState>;
const account = (platform: Platform, login: string, name: string) =>
  call("PUT", `/control/accounts/${platform}/${login}`, { name }) as Promise<AccountState>;
const accountState = (platform: Platform, login: string) =>
  call("GET", `/control/accounts/${platform}/${login}`) as Promise<AccountState>;
const mintSession = (platform: Platform, login: string) =>
  call("POST", `/control/accounts/${platform}/${login}/sessions`) as Promise<StorageState>;
const snap = (adapter: PlatformAdapter) => snapshotOf(adapter);

describe("sign-in pages and signed-in pre-joins", () => {
  it("Google: the sign-in page sets SID and the account's localStorage item; Meet then shows the signed-in pre-join, and the roster the account's name", async () => {
    const login = fresh("ada");
    await account("google", login, "Ada Signed");
    const code = meetCode();
    await configure("google", code, { admit: "open", participants: 1 });
    await page.goto(`${host.url}/accounts/signin?continue=${encodeURIComponent(`/meet/${code}`)}`);
    expect(await page.locator("h1").innerText()).toBe("Sign in");
    await page.locator('input[type="email"]').fill(`${login}@example.com`);
    await page.getByRole("button", { name: "Next" }).click();
    await page.waitForURL(`**/meet/${code}`, WAIT);
    await page.getByRole("button", { name: "Join now", exact: true }).waitFor(WAIT);
    expect(await page.locator('input[aria-label="Your name"]').count()).toBe(0);
    expect(await snap(meetAdapter)).toMatchObject({
      phase: "prejoin",
      account: { name: "Ada Signed", email: `${login}@example.com` },
    });
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => c.name)).toEqual(expect.arrayContaining(["SID", "HSID"]));
    expect(await page.evaluate(() => localStorage.getItem("gds:account"))).toBe(login);

    await page.getByRole("button", { name: "Join now", exact: true }).click();
    await page
      .locator('[aria-label="Participants"] [data-self-name]')
      .waitFor({ state: "attached", ...WAIT });
    expect(
      await page.locator('[aria-label="Participants"] [data-self-name]').getAttribute("aria-label"),
    ).toBe("Ada Signed");
    const state = await meeting("google", code);
    expect(state.attendees).toMatchObject([{ name: "Ada Signed", account: login, state: "in_call" }]);
  });

  it("Zoom: a minted session (storage state) gives the pre-filled form and the account label", async () => {
    const login = fresh("zed");
    await account("zoom", login, "Zed Signed");
    const id = zoomId();
    await configure("zoom", id, { admit: "open" });
    const session = await mintSession("zoom", login);
    expect(session.cookies.map((c) => c.name)).toContain("zm_aid");
    await page.context().setStorageState(session);
    await page.goto(`${host.url}/wc/${id}/join`);
    await page.locator("#input-for-name").waitFor(WAIT);
    expect(await page.locator("#input-for-name").inputValue()).toBe("Zed Signed");
    expect(await snap(zoomAdapter)).toMatchObject({
      phase: "prejoin",
      account: { name: "Zed Signed", email: `${login}@example.com` },
    });
  });

  it("Teams: signed in takes ESTSAUTH (session-only) and the MSAL localStorage item; without the item Microsoft asks for a sign-in", async () => {
    const login = fresh("tia");
    await account("teams", login, "Tia Signed");
    const id = teamsId();
    await configure("teams", id, { admit: "open" });
    const session = await mintSession("teams", login);
    const estsauth = session.cookies.find((c) => c.name === "ESTSAUTH");
    expect(estsauth?.expires).toBe(-1);
    await page.context().setStorageState(session);
    await page.goto(teamsLink(id));
    await page.locator('button[data-tid="joinOnWeb"]').click();
    await page.locator('[data-tid="prejoin-join-button"]').waitFor(WAIT);
    expect(await page.locator('input[data-tid="prejoin-display-name-input"]').count()).toBe(0);
    expect(await snap(teamsAdapter)).toMatchObject({
      phase: "prejoin",
      account: { name: "Tia Signed", email: `${login}@example.com` },
    });

    // The cookie alone (the localStorage half lost): Microsoft's sign-in page.
    await page.context().setStorageState({ cookies: session.cookies, origins: [] });
    await page.goto(teamsLink(teamsId()));
    await page.locator('button[data-tid="joinOnWeb"]').click();
    await page.locator('input[name="loginfmt"]').waitFor(WAIT);
    expect((await snap(teamsAdapter)).phase).toBe("sign_in");
  });
});

describe("session rotation and expiry", () => {
  it("each visit rotates the cookie; the value presented works one more visit, then is refused (Google's sign-in page)", async () => {
    const login = fresh("rot");
    await account("google", login, "Rota Tion");
    const code = meetCode();
    await configure("google", code, { admit: "open" });
    const original = await mintSession("google", login);
    const visit = async (state: StorageState) => {
      await page.context().clearCookies();
      await page.context().setStorageState(state);
      await page.goto(`${host.url}/meet/${code}`);
      await page.locator("main").first().waitFor(WAIT);
      return { snapshot: await snap(meetAdapter), state: await page.context().storageState() };
    };
    const first = await visit(original);
    expect(first.snapshot.account?.name).toBe("Rota Tion");
    const sid = (state: { cookies: Array<{ name: string; value: string }> }) =>
      state.cookies.find((c) => c.name === "SID")?.value;
    expect(sid(first.state)).not.toBe(sid(original));
    // The same (old) session again: still good once.
    expect((await visit(original)).snapshot.account?.name).toBe("Rota Tion");
    // A third time: refused, and Google sends the browser to its sign-in page.
    const third = await visit(original);
    expect(third.snapshot.phase).toBe("sign_in");
    expect(page.url()).toContain("/accounts/signin");
    // The rotated one (as a write-back would have kept it) still signs in.
    expect((await visit(first.state)).snapshot.account?.name).toBe("Rota Tion");
    expect(await accountState("google", login)).toMatchObject({ signedInVisits: 3, refusedVisits: 1 });
  });

  it("an expired account's sessions are refused: Zoom shows the guest form, with no account", async () => {
    const login = fresh("exp");
    await account("zoom", login, "Ex Pired");
    const id = zoomId();
    await configure("zoom", id, { admit: "open" });
    const session = await mintSession("zoom", login);
    await call("POST", `/control/accounts/zoom/${login}/expire`);
    await page.context().setStorageState(session);
    await page.goto(`${host.url}/wc/${id}/join`);
    await page.locator("#input-for-name").waitFor(WAIT);
    expect(await page.locator("#input-for-name").inputValue()).toBe("");
    const reading = await snap(zoomAdapter);
    expect(reading.phase).toBe("prejoin");
    expect(reading.account).toBeUndefined();
    expect(await accountState("zoom", login)).toMatchObject({ expired: true, refusedVisits: 1 });
  });
});

describe("walls for anonymous guests", () => {
  const meetWalls = [
    ["meet-video-call", "You can't join this video call"],
    ["meet-meeting", "You can't join this meeting"],
  ] as const;
  for (const [wall, heading] of meetWalls) {
    it(`Meet ${wall}: the heading "${heading}", read as sign_in`, async () => {
      const code = meetCode();
      await configure("google", code, { anonymous: "refused", signInWall: wall });
      await page.goto(`${host.url}/meet/${code}`);
      await page.locator("h1").waitFor(WAIT);
      expect(await page.locator("h1").innerText()).toBe(heading);
      expect(
        await page.getByText("No one can join a meeting unless invited or admitted by the host").isVisible(),
      ).toBe(true);
      expect(await snap(meetAdapter)).toMatchObject({ phase: "sign_in" });
    });
  }

  it("Meet: the wall's sub-text alone (Meet's home page says it too) is no wall", async () => {
    await page.setContent(
      "<main><h1>Video calls and meetings</h1><p>No one can join a meeting unless invited or admitted by the host</p></main>",
    );
    expect((await snap(meetAdapter)).phase).toBe("loading");
  });

  const zoomWalls = [
    ["zoom-prompt", "Sign in to join this meeting"],
    ["zoom-authorized-only", "This meeting is for authorized participants only"],
    ["zoom-commercial", "requires authentication on the commercial Zoom platform"],
  ] as const;
  for (const [wall, words] of zoomWalls) {
    it(`Zoom ${wall}: "${words}", read as sign_in`, async () => {
      const id = zoomId();
      await configure("zoom", id, { anonymous: "refused", signInWall: wall });
      await page.goto(`${host.url}/wc/${id}/join`);
      await page.getByText(words, { exact: false }).waitFor(WAIT);
      expect((await snap(zoomAdapter)).phase).toBe("sign_in");
    });
  }

  it("Zoom zoom-redirect: sent to /signin, read as sign_in", async () => {
    const id = zoomId();
    await configure("zoom", id, { anonymous: "refused", signInWall: "zoom-redirect" });
    await page.goto(`${host.url}/wc/${id}/join`);
    await page.locator("#email").waitFor(WAIT);
    expect(new URL(page.url()).pathname).toBe("/signin");
    expect((await snap(zoomAdapter)).phase).toBe("sign_in");
  });

  for (const [wall, words] of [
    ["teams-verify-info", "We need to verify your info before you can join"],
    ["teams-anonymous-disabled", "Sign in to Teams to join, or contact the meeting organizer"],
  ] as const) {
    it(`Teams ${wall}: "${words}", read as sign_in`, async () => {
      const id = teamsId();
      await configure("teams", id, { anonymous: "refused", signInWall: wall });
      await page.goto(teamsLink(id));
      await page.locator('button[data-tid="joinOnWeb"]').click();
      await page.getByText(words).waitFor(WAIT);
      expect((await snap(teamsAdapter)).phase).toBe("sign_in");
    });
  }
});

describe("bot walls and Teams' bot identification", () => {
  for (const [wall, words] of [
    ["captcha", "Automated bots aren't allowed"],
    ["captcha-curly", "Automated bots aren\u2019t allowed"],
    ["image", "Type the characters you see"],
  ] as const) {
    it(`Zoom botWall=${wall}: after Join, "${words}" (bot_wall), and the host took no join`, async () => {
      const id = zoomId();
      await configure("zoom", id, { admit: "open", botWall: wall });
      await page.goto(`${host.url}/wc/${id}/join`);
      await page.locator("#wc_agree1").click();
      await page.getByRole("button", { name: "Continue without microphone and camera" }).click();
      await page.locator("#onetrust-accept-btn-handler").click();
      await page.locator("#input-for-name").fill("Meetbot");
      await page.locator("button.preview-join-button").click();
      await page.getByText(words, { exact: false }).waitFor(WAIT);
      expect((await snap(zoomAdapter)).phase).toBe("bot_wall");
      expect((await meeting("zoom", id)).attendees).toEqual([]);
    });
  }

  /** Teams from the link (with `fragment`) through Join now, as a guest named Meetbot. */
  async function teamsJoin(id: string, fragment = "") {
    await page.goto(`${teamsLink(id)}${fragment}`);
    await page.locator('button[data-tid="joinOnWeb"]').click();
    await page.locator('input[data-tid="prejoin-display-name-input"]').fill("Meetbot");
    await page.locator('[data-tid="prejoin-join-button"]').click();
  }

  it('Teams botWall: "Verify you\'re a real person" after Join now (bot_wall)', async () => {
    const id = teamsId();
    await configure("teams", id, { admit: "open", botWall: "captcha" });
    await teamsJoin(id);
    await page.getByText("Verify you're a real person").waitFor(WAIT);
    expect((await snap(teamsAdapter)).phase).toBe("bot_wall");
    expect((await meeting("teams", id)).attendees).toEqual([]);
  });

  it("Teams botLobby: a valid #token= skips the lobby; a wrong one (or none) waits there", async () => {
    const good = teamsId();
    await configure("teams", good, { admit: "open", botLobby: true, botToken: "valid-token-123" });
    await teamsJoin(good, "#token=valid-token-123");
    await page.locator("#hangup-button").waitFor(WAIT);
    expect((await meeting("teams", good)).attendees).toMatchObject([{ state: "in_call", identified: true }]);

    const bad = teamsId();
    await configure("teams", bad, { admit: "open", botLobby: true, botToken: "valid-token-123" });
    await teamsJoin(bad, "#token=forged");
    await page.getByText("Someone will let you in shortly").waitFor(WAIT);
    expect((await meeting("teams", bad)).attendees).toMatchObject([{ state: "lobby", identified: false }]);
  });
});

describe("Meet: the account already in the call", () => {
  async function signedInWithAccountInCall(joinHereToo: boolean) {
    const login = fresh("dup");
    await account("google", login, "Du Plicate");
    const code = meetCode();
    await configure("google", code, { admit: "open", joinHereToo });
    await call("POST", `/control/meetings/google/${code}/participants`, {
      name: "Du Plicate",
      account: login,
    });
    await page.context().setStorageState(await mintSession("google", login));
    await page.goto(`${host.url}/meet/${code}`);
    await page.getByRole("button", { name: "Switch here", exact: true }).waitFor(WAIT);
    return code;
  }

  it('offers "Switch here" (a div[role=button]) and "Join here too"; joining too keeps the other session', async () => {
    const code = await signedInWithAccountInCall(true);
    expect(await page.locator('div[role="button"]', { hasText: "Switch here" }).count()).toBe(1);
    await page.getByRole("button", { name: "Join here too", exact: true }).click();
    await page.locator('button[aria-label^="People"]').waitFor(WAIT);
    const state = await meeting("google", code);
    expect(state.participants.map((p) => p.name)).toContain("Du Plicate");
    expect(state.attendees).toMatchObject([{ name: "Du Plicate", state: "in_call" }]);
  });

  it('with joinHereToo=false only "Switch here"; clicking it pulls the other session out', async () => {
    const code = await signedInWithAccountInCall(false);
    expect(await page.getByRole("button", { name: "Join here too" }).count()).toBe(0);
    expect((await snap(meetAdapter)).phase).toBe("prejoin");
    await page.getByRole("button", { name: "Switch here", exact: true }).click();
    await page.locator('button[aria-label^="People"]').waitFor(WAIT);
    expect((await meeting("google", code)).participants.map((p) => p.name)).not.toContain("Du Plicate");
  });
});
