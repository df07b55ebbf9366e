import { describe, expect, it } from "vitest";
import type { StorageCookie, StorageState } from "../../src/core/index.js";
import { effectiveSignIn, isSignedIn } from "../../src/login.js";

/** What `meetbot login` takes as proof that the person signed in (platforms' `*_SIGN_IN` hooks). */

const cookie = (name: string, domain: string, value = "v4lue"): StorageCookie => ({
  name,
  value,
  domain,
  path: "/",
  expires: -1,
  httpOnly: true,
  secure: true,
  sameSite: "Lax",
});
const state = (cookies: StorageCookie[], items: string[] = []): StorageState => ({
  cookies,
  origins: items.length
    ? [{ origin: "https://teams.microsoft.com", localStorage: items.map((name) => ({ name, value: "x" })) }]
    : [],
});

describe("the sign-in check", () => {
  const google = effectiveSignIn("google");

  it("Google: a session cookie on google.com or a subdomain, with a value", () => {
    expect(isSignedIn(state([cookie("SID", ".google.com")]), google)).toBe(true);
    expect(isSignedIn(state([cookie("__Secure-1PSID", "accounts.google.com")]), google)).toBe(true);
    expect(isSignedIn(state([cookie("SID", ".google.com", "")]), google)).toBe(false);
    expect(isSignedIn(state([cookie("SID", ".notgoogle.com")]), google)).toBe(false);
    expect(isSignedIn(state([cookie("NID", ".google.com")]), google)).toBe(false);
  });

  it("Zoom: the cookies set before any sign-in prove nothing", () => {
    const zoom = effectiveSignIn("zoom");
    expect(
      isSignedIn(state(["_zm_ssid", "cred", "_zm_mtk_guid"].map((n) => cookie(n, ".zoom.us"))), zoom),
    ).toBe(false);
    expect(isSignedIn(state([cookie("zm_aid", ".zoom.us")]), zoom)).toBe(true);
  });

  it("Teams: Microsoft's session cookie and the web client's account keys, both", () => {
    const teams = effectiveSignIn("teams");
    const estsauth = cookie("ESTSAUTH", "login.microsoftonline.com");
    expect(isSignedIn(state([estsauth]), teams)).toBe(false);
    expect(isSignedIn(state([estsauth], ["msal.account.keys"]), teams)).toBe(true);
    expect(
      isSignedIn(
        state([cookie("SignInStateCookie", "login.microsoftonline.com")], ["msal.account.keys"]),
        teams,
      ),
    ).toBe(false);
  });

  it("a replaced sign-in page (a mock's): its host is the cookies' domain", () => {
    const mock = effectiveSignIn("google", "http://127.0.0.1:8090/accounts/signin");
    expect(mock).toMatchObject({ url: "http://127.0.0.1:8090/accounts/signin", cookieDomain: "127.0.0.1" });
    expect(isSignedIn(state([cookie("SID", "127.0.0.1")]), mock)).toBe(true);
    expect(isSignedIn(state([cookie("SID", ".google.com")]), mock)).toBe(false);
  });
});
