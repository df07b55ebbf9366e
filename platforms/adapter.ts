import type { Page } from "playwright";
import type { MeetingInfo, Platform, PlatformUrls, SubCode } from "../src/core/index.js";
import type { LiveAdapter } from "./live.js";

/**
 * Where the bot stands in the meeting, as read from the page. Every platform maps its own DOM
 * to these phases; the runner's lifecycle only ever looks at phases.
 */
export type Phase =
  | "loading"
  | "prejoin"
  | "lobby"
  | "in_call"
  // how a call can end for the bot
  | "ended"
  | "removed"
  | "left"
  // why a join can fail
  | "denied"
  | "not_found"
  | "blocked"
  | "bot_wall"
  | "sign_in"
  | "bad_passcode"
  | "host_not_started";

export interface Participant {
  id: string;
  name: string;
}

export interface PageSnapshot {
  phase: Phase;
  /**
   * Other people in the call (never the bot itself). Empty unless in the call. The bot is told
   * apart by what the page marks as the user's own (Meet's self mark, Teams' "(You)" tag and self
   * view, Zoom's "(Me)"), never by its display name alone: anyone can join under that name, and
   * such a namesake is listed, heard and attributed like everyone else.
   */
  participants: Participant[];
  /**
   * Ids (as in `participants`) of those the page currently shows as speaking, from the
   * platform's own speaking indicator. Optional: an adapter that cannot tell leaves it out.
   */
  speakers?: string[];
  /**
   * What decided the phase: the hook that matched, with the variant where the hook has several,
   * e.g. `texts.lobby "Asking to be let in"`, `peopleButton`. The runner logs it on every phase
   * change, so a real platform's UI change shows in the logs. Optional; absent while loading.
   */
  evidence?: string;
  /**
   * On the pre-join: the signed-in account the page shows (the platform's own account control),
   * with its name and e-mail where the page shows them. Absent for an anonymous guest. A page that
   * asks for a name to type is never signed in, whatever else it shows.
   */
  account?: { name: string | null; email: string | null };
}

/**
 * Called by an adapter for each step of the join where it had alternatives, with the one that
 * matched: which call-to-action text, which form a toggle was in, which pop-ups it dismissed, and
 * so on (`hook` names the step, `variant` what was found). The runner logs every note, so a UI
 * change on a real platform shows in the logs before joins fail.
 */
export type JoinNote = (hook: string, variant: string) => void;

export interface JoinOptions {
  displayName: string;
  info: MeetingInfo;
  note?: JoinNote;
  /**
   * Present for a signed-in bot: called once the pre-join form itself is on screen (past any
   * launcher), before anything on it is typed or clicked; it rejects (and the join must stop) when
   * the page does not show the login's account. Signed in there is no name to type (the meeting
   * shows the account's), and a second session of the account is joined beside the first ("Join
   * here too"), never moved here ("Switch here").
   */
  confirmSignedIn?: () => Promise<void>;
  /**
   * Join with the camera on (the bot shows a picture from its join: BotConfig output.image); by
   * default it is turned off, as the microphone always is.
   */
  camera?: boolean;
}

/**
 * Where a person signs in to the platform once, and what proves they did (`meetbot login`): the
 * page opened, and the session cookies that appear for the platform's domain once signed in (one
 * is enough; a pre-sign-in cookie such as Zoom's `_zm_ssid` is never one of them). Names from
 * docs/notes/getting-in-2026.md; a platform that renames its cookies is a fix to its selectors.ts.
 */
export interface SignInHooks {
  /** The sign-in page opened by default (`--sign-in-url` replaces it, e.g. with a mock's). */
  url: string;
  /** The cookies' domain: a cookie for it or a subdomain counts. A replaced URL's host replaces it. */
  cookieDomain: string;
  /** Any one of these cookies, with a value, proves a sign-in. */
  sessionCookies: readonly string[];
  /**
   * localStorage items the platform's web client needs beside the cookies (in any origin): the
   * sign-in is saved only once one is there too.
   */
  storageItems?: readonly string[];
}

/** Thrown by an adapter's join() when the page made clear why the bot cannot get in. */
export class JoinRefused extends Error {
  constructor(
    readonly subCode: SubCode,
    message: string,
  ) {
    super(message);
    this.name = "JoinRefused";
  }
}

/**
 * What a snapshot gets: the platform's hooks, and the bot's display name. The name never proves
 * that an entry is the bot (see PageSnapshot.participants); only where the page marks nothing
 * (Zoom's video tiles) does it say which name the bot's own tile carries, so that one such tile,
 * and no more, is left out.
 */
export type SnapshotHooks = Record<string, unknown> & { selfName: string };

/** What each failure phase means for the bot's final status. */
/**
 * How long a polite leave may take, its clicks and then the page showing the bot left: seconds on
 * a loaded machine (3 s was too short once six bots shared two slow cores). Closing the browser
 * before the page took the click leaves the bot in the call as the others see it.
 */
export const LEAVE_TIMEOUT_MS = 10_000;

export const FAILURE_PHASES: Partial<Record<Phase, SubCode>> = {
  denied: "ADMISSION_DENIED",
  not_found: "MEETING_NOT_FOUND",
  blocked: "BLOCKED",
  bot_wall: "BOT_BLOCKED",
  sign_in: "SIGN_IN_REQUIRED",
  bad_passcode: "BAD_PASSCODE",
};

/**
 * Phases in which the bot waits to be let in, with the FATAL subCode it gets when it has waited
 * waitingRoomTimeout: a lobby (someone must admit it) or a meeting whose host has not started it.
 */
export const WAITING_PHASES: Partial<Record<Phase, SubCode>> = {
  lobby: "WAITING_ROOM_TIMEOUT",
  host_not_started: "HOST_NOT_STARTED",
};

/** Phases in which the call is over for the bot, with the CALL_ENDED subCode each gives. */
export const END_PHASES: Partial<Record<Phase, SubCode>> = {
  ended: "MEETING_ENDED",
  removed: "REMOVED",
  left: "LEFT_ON_REQUEST",
};

/**
 * One per platform (platforms/<name>/index.ts). The same code must work against the real site
 * and against our mock, so it relies only on the hooks listed in that platform's selectors.ts.
 */
export interface PlatformAdapter {
  platform: Platform;
  /**
   * The URL the browser opens for this meeting; `urls` replace the platforms' own origins.
   * `extras.botToken`: Teams' bot-identification token (BotConfig teamsBotToken), which the Teams
   * adapter puts in the URL's fragment (`#token=`); the others ignore it.
   */
  meetingUrl(info: MeetingInfo, urls: PlatformUrls, extras?: { botToken?: string }): string;
  /**
   * Runs inside the page and reads the current phase and roster from the DOM. It is serialized,
   * so it must be self-contained: everything it needs comes in `hooks` (the platform's
   * selectors and texts, plus the bot's own name: see SnapshotHooks).
   */
  snapshot: (hooks: SnapshotHooks) => PageSnapshot;
  /** The data `snapshot` reads its selectors and texts from (JSON-serializable). */
  hooks: Record<string, unknown>;
  /** Where a person signs in once, and the cookies that prove it (`meetbot login`). */
  signIn: SignInHooks;
  /** Pre-join: type the name, turn the microphone off and the camera off (or on: `camera`), ask to join. */
  join(page: Page, opts: JoinOptions): Promise<void>;
  /**
   * Once admitted, before the call is watched (and the silence clock starts): e.g. join the
   * call's audio, without which the bot hears nothing, or open the participants panel, which some
   * platforms render only while it is open. Optional; failures are logged, not fatal.
   */
  afterAdmission?(page: Page, opts?: { note?: JoinNote }): Promise<void>;
  /**
   * Leaves the call politely (best effort; the runner closes the browser afterwards anyway): its
   * clicks may take LEAVE_TIMEOUT_MS. The runner then waits for the page to show it left. Resolves
   * null once the leave was clicked, else why it was not (for the runner's log: the others may
   * have seen the bot drop instead of leave).
   */
  leave(page: Page): Promise<string | null>;
  /** The call's captions and chat (platforms/live.ts). Optional: without it the bot reads neither. */
  live?: LiveAdapter;
}
