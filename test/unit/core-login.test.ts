import { describe, expect, it } from "vitest";
import {
  BotConfig,
  botAccountWebhookEvent,
  LoginSessionWriteBack,
  loginSessionUrl,
  MAX_SESSION_COOKIES,
  StorageState,
  SubCode,
} from "../../src/core/index.js";

const cookie = {
  name: "SID",
  value: "g.a000-secret",
  domain: ".google.com",
  path: "/",
  expires: 1_900_000_000,
  httpOnly: true,
  secure: true,
  sameSite: "Lax",
};
const session = {
  cookies: [cookie, { ...cookie, name: "session-only", expires: -1, sameSite: "None" }],
  origins: [{ origin: "https://meet.google.com", localStorage: [{ name: "k", value: "v" }] }],
};
const minimal = {
  botId: 7,
  meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
  callback: { baseUrl: "http://127.0.0.1:8080", token: "0123456789abcdef0123" },
  upload: { url: "http://127.0.0.1:8080/v1/bot-callbacks/7/recording" },
};

describe("StorageState (Playwright's storage state)", () => {
  it("takes what context.storageState() writes, and drops what it does not know", () => {
    const parsed = StorageState.parse({ ...session, indexedDB: [{ big: true }] });
    expect(parsed).toEqual(session);
  });

  it("names every bad part", () => {
    const bad = StorageState.safeParse({
      cookies: [
        { ...cookie, sameSite: "lax", expires: -2 },
        { ...cookie, httpOnly: "yes" },
      ],
      origins: [{ origin: "", localStorage: [] }],
    });
    expect(bad.error?.issues.map((i) => i.path.join("."))).toEqual([
      "cookies.0.expires",
      "cookies.0.sameSite",
      "cookies.1.httpOnly",
      "origins.0.origin",
    ]);
    expect(StorageState.safeParse({ cookies: [] }).success).toBe(false);
  });

  it("bounds its arrays", () => {
    const many = { cookies: Array.from({ length: MAX_SESSION_COOKIES + 1 }, () => cookie), origins: [] };
    expect(StorageState.safeParse(many).success).toBe(false);
    expect(StorageState.safeParse({ ...many, cookies: many.cookies.slice(1) }).success).toBe(true);
  });
});

describe("BotConfig.login", () => {
  it("is absent for an anonymous bot", () => {
    expect(BotConfig.parse(minimal).login).toBeUndefined();
  });

  it("carries the mode, the account and its session", () => {
    const login = { mode: "only_if_required", accountId: 3, accountName: "Notetaker", session };
    expect(BotConfig.parse({ ...minimal, login }).login).toEqual(login);
    const bad = BotConfig.safeParse({ ...minimal, login: { ...login, mode: "sometimes", session: {} } });
    expect(bad.error?.issues.map((i) => i.path.join("."))).toEqual([
      "login.mode",
      "login.session.cookies",
      "login.session.origins",
    ]);
  });
});

describe("the write-back and the account events", () => {
  it("takes a session with the account's name and e-mail, both optional", () => {
    expect(LoginSessionWriteBack.parse({ session })).toEqual({ session });
    expect(LoginSessionWriteBack.parse({ session, accountName: null, accountEmail: "a@b.c" })).toMatchObject({
      accountName: null,
    });
    expect(loginSessionUrl(minimal)).toBe("http://127.0.0.1:8080/v1/bot-callbacks/7/login-session");
  });

  it("has the subCodes of signed-in bots", () => {
    for (const code of ["SIGN_IN_REQUIRED", "BOT_BLOCKED", "SESSION_EXPIRED", "LOGIN_UNAVAILABLE"])
      expect(SubCode.safeParse(code).success, code).toBe(true);
  });

  it("says which account and its status, nothing else", () => {
    expect(botAccountWebhookEvent("bot_account.expired", { accountId: 4, status: "expired" })).toEqual({
      event: "bot_account.expired",
      data: { accountId: 4, status: "expired" },
    });
  });
});
