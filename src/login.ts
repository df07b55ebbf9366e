import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright";
import type { SignInHooks } from "../platforms/adapter.js";
import { adapterFor } from "../platforms/index.js";
import { MAX_SESSION_BYTES, type Platform, StorageState } from "./core/index.js";
import { childEnv } from "./media/processes.js";
import { runsAsRoot, stealthChromium } from "./runner/browser.js";

/**
 * `meetbot login <platform>`: a person signs a bot account in once, in a visible Chromium, and the
 * session (Playwright's storage state) becomes a bot account on a server (POST /v1/bot-accounts
 * with an API key) or a file (mode 0600). The browser opens at the platform's sign-in page; the
 * command waits until the platform's session cookies appear for its domain (platforms/<p>/
 * selectors.ts, `signIn`), saves, and closes it. The session is never printed.
 *
 * Every failure is one line on stderr and a non-zero exit: 1 for what happened (server, key,
 * window closed, timeout), 2 for how it was asked (flags).
 */

export interface LoginOptions {
  platform: Platform;
  name: string;
  group?: string;
  /** Upload to this server with `apiKey`... */
  server?: string;
  apiKey?: string;
  /** ...or write this file. */
  out?: string;
  /** Replaces the platform's sign-in page (a mock's); its host becomes the cookies' domain. */
  signInUrl?: string;
  timeoutMs: number;
  executablePath: string;
  display: string;
  /** Chromium's DevTools on 127.0.0.1:<port>, for a program to drive the window (tests). */
  remoteDebuggingPort?: number;
}

export interface LoginIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** A failure the person can act on: its message is the one line printed. */
export class LoginFailure extends Error {}

const POLL_MS = 250;
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** The sign-in hooks as used: the replaced URL's host is the cookies' domain. */
export function effectiveSignIn(platform: Platform, signInUrl?: string): SignInHooks {
  const hooks = adapterFor(platform).signIn;
  if (!signInUrl) return hooks;
  return { ...hooks, url: signInUrl, cookieDomain: new URL(signInUrl).hostname };
}

/** A cookie domain (".google.com", "accounts.google.com") within `domain` (google.com). */
const withinDomain = (cookieDomain: string, domain: string) => {
  const host = cookieDomain.replace(/^\./, "").toLowerCase();
  return host === domain || host.endsWith(`.${domain}`);
};

/** Whether a storage state proves the sign-in `hooks` describe. */
export function isSignedIn(state: StorageState, hooks: SignInHooks): boolean {
  const cookie = state.cookies.some(
    (c) =>
      hooks.sessionCookies.includes(c.name) && c.value !== "" && withinDomain(c.domain, hooks.cookieDomain),
  );
  if (!cookie) return false;
  if (!hooks.storageItems?.length) return true;
  return state.origins.some((o) => o.localStorage.some((item) => hooks.storageItems?.includes(item.name)));
}

const platformName: Record<Platform, string> = { google: "Google", zoom: "Zoom", teams: "Microsoft" };

export async function runLogin(opts: LoginOptions, io: LoginIo): Promise<number> {
  try {
    const upload = opts.server ? await checkServer(opts.server, opts.apiKey ?? "") : null;
    const session = await signInOnce(opts, io);
    if (upload) {
      const account = await upload(opts, session);
      io.out(
        `Saved bot account ${account.id} "${account.name}" (${account.platform}, group "${account.group}") on ${opts.server}`,
      );
    } else if (opts.out) {
      await writePrivate(opts.out, `${JSON.stringify(session, null, 2)}\n`);
      io.out(
        `Saved the ${opts.platform} session to ${opts.out} (mode 0600; it signs the account in: keep it secret)`,
      );
    }
    return 0;
  } catch (error) {
    if (!(error instanceof LoginFailure)) throw error;
    io.err(`meetbot login: ${error.message}`);
    return 1;
  }
}

interface CreatedAccount {
  id: number;
  name: string;
  platform: string;
  group: string;
}

/**
 * Checks the server and the key before anyone signs in (GET /v1/bot-accounts), and returns the
 * upload to run afterwards.
 */
async function checkServer(
  server: string,
  apiKey: string,
): Promise<(opts: LoginOptions, session: StorageState) => Promise<CreatedAccount>> {
  const call = async (method: string, path: string, body?: unknown) => {
    let response: Response;
    try {
      response = await fetch(new URL(path, server), {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new LoginFailure(
        `cannot reach the server at ${server} (${cause?.code ?? cause?.message ?? (error as Error).message})`,
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    if (response.status === 401) throw new LoginFailure(`the server at ${server} refused the API key (401)`);
    if (!response.ok) {
      const detail = (parsed as { detail?: unknown } | null)?.detail;
      const why = typeof detail === "string" ? detail : JSON.stringify(detail ?? text.slice(0, 200));
      throw new LoginFailure(`${method} ${path} on ${server}: HTTP ${response.status} ${why}`);
    }
    if (parsed === null)
      throw new LoginFailure(`${server} is not a meetbot server (${method} ${path} gave no JSON)`);
    return parsed;
  };
  await call("GET", "/v1/bot-accounts?page_size=1");
  return async (opts, session) =>
    (await call("POST", "/v1/bot-accounts", {
      platform: opts.platform,
      name: opts.name,
      ...(opts.group ? { group: opts.group } : {}),
      session,
    })) as CreatedAccount;
}

/** Opens the window, waits for the sign-in, answers the storage state; the browser is gone after. */
async function signInOnce(opts: LoginOptions, io: LoginIo): Promise<StorageState> {
  const hooks = effectiveSignIn(opts.platform, opts.signInUrl);
  const profileDir = await mkdtemp(join(tmpdir(), "meetbot-login-"));
  let context: BrowserContext | undefined;
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    void context?.close().catch(() => {});
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  try {
    try {
      context = await stealthChromium().launchPersistentContext(profileDir, {
        executablePath: opts.executablePath,
        headless: false,
        viewport: null,
        ignoreDefaultArgs: ["--enable-automation"],
        args: [
          ...(runsAsRoot() ? ["--no-sandbox"] : []),
          "--no-first-run",
          "--no-default-browser-check",
          "--disable-sync",
          ...(opts.remoteDebuggingPort !== undefined
            ? [`--remote-debugging-port=${opts.remoteDebuggingPort}`, "--remote-debugging-address=127.0.0.1"]
            : []),
        ],
        // The allowlisted environment, and what a desktop or `ssh -X` display needs to be reached.
        env: childEnv({
          DISPLAY: opts.display,
          ...(process.env.XAUTHORITY ? { XAUTHORITY: process.env.XAUTHORITY } : {}),
        }),
        timeout: 30_000,
        // Ctrl-C and SIGTERM close the window here (below), so the profile, cookies and all, goes too.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
    } catch (error) {
      const first = (error as Error).message.split("\n")[0];
      throw new LoginFailure(
        `Chromium (${opts.executablePath}) failed to start on display ${opts.display}: ${first}`,
      );
    }
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(hooks.url).catch((error: Error) => {
      throw new LoginFailure(`cannot open ${hooks.url}: ${error.message.split("\n")[0]}`);
    });
    const minutes = Math.round((opts.timeoutMs / 60_000) * 10) / 10;
    io.out(
      `Sign in to ${platformName[opts.platform]} in the browser window (${hooks.url}).\n` +
        `Waiting up to ${minutes} min for a session cookie (${hooks.sessionCookies.join(", ")}) on ${hooks.cookieDomain}` +
        (hooks.storageItems?.length ? ` and ${hooks.storageItems.join(", ")} in the page's storage` : "") +
        "; close the window to give up.",
    );
    return await waitForSignIn(context, hooks, opts.timeoutMs, () => interrupted);
  } finally {
    for (const signal of SIGNALS) process.off(signal, onSignal);
    await context?.close().catch(() => {});
    await rm(profileDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }
}

async function waitForSignIn(
  context: BrowserContext,
  hooks: SignInHooks,
  timeoutMs: number,
  interrupted: () => boolean,
): Promise<StorageState> {
  let closed = false;
  const onClose = () => {
    closed = true;
  };
  context.on("close", onClose);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (interrupted()) throw new LoginFailure("interrupted; nothing saved");
      // Every window closed (Chromium may stay up a moment without one) or the browser gone.
      if (closed || context.pages().length === 0) {
        throw new LoginFailure("the browser window was closed before the sign-in completed; nothing saved");
      }
      const state = await context.storageState().catch(() => null);
      if (state) {
        const parsed = StorageState.safeParse(state);
        if (parsed.success && isSignedIn(parsed.data, hooks)) {
          if (JSON.stringify(parsed.data).length > MAX_SESSION_BYTES) {
            throw new LoginFailure(`the session is larger than ${MAX_SESSION_BYTES} bytes; nothing saved`);
          }
          return parsed.data;
        }
      }
      if (Date.now() > deadline) {
        throw new LoginFailure(
          `no sign-in after ${Math.round(timeoutMs / 1000)} s (no ${hooks.sessionCookies.join("/")} cookie on ${hooks.cookieDomain}); nothing saved`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } finally {
    context.off("close", onClose);
  }
}

/** Writes `text` readable by its owner only (0600, also when the file was there before). */
async function writePrivate(path: string, text: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "w", 0o600);
  } catch (error) {
    throw new LoginFailure(`cannot write ${path}: ${(error as Error).message}`);
  }
  try {
    await handle.chmod(0o600);
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
}
