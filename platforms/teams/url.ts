import { isPlatformHost, type MeetingInfo } from "../../src/core/index.js";

/**
 * Teams meeting links. A scheduled meeting's link names its chat thread and, in `context`, the
 * tenant and organizer:
 *   https://teams.microsoft.com/l/meetup-join/19%3ameeting_<id>%40thread.v2/0?context={"Tid":"…","Oid":"…"}
 * Newer "meet" links carry a numeric id and a passcode:
 *   https://teams.microsoft.com/meet/<id>?p=<passcode>   (and teams.live.com/meet/… for personal accounts)
 * BotConfig platformUrls.teamsWeb (MEETBOT_TEAMS_WEB_BASE_URL on the server) replaces the origin,
 * so the same adapter joins the mock host.
 */

export const DEFAULT_TEAMS_BASE_URL = "https://teams.microsoft.com";

/** The thread id of a scheduled meeting, decoded: `19:meeting_<id>@thread.v2`. */
const THREAD_ID = /^19:meeting_([^@/\s]+)@thread\.v2$/i;

export type TeamsLink =
  { kind: "meetup-join"; meetingId: string; url: URL } | { kind: "meet"; meetingId: string; url: URL };

/**
 * The origin (and optional path prefix) that replaces Teams' own, when one is set (an http(s)
 * URL, checked by BotConfig), without a trailing slash.
 */
export function teamsBaseOverride(override: string | undefined): string | undefined {
  return override?.trim() ? override.trim().replace(/\/+$/, "") : undefined;
}

/**
 * The id inside a meetup-join link's path segment, or null. Accepts the segment encoded as Teams
 * writes it (`19%3ameeting_…%40thread.v2`) or decoded.
 */
export function meetingIdFromThread(segment: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return null;
  }
  return THREAD_ID.exec(decoded)?.[1] ?? null;
}

/** Recognizes the two Teams join-link shapes on any host; null for anything else. */
export function parseTeamsLink(link: string): TeamsLink | null {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  const segments = url.pathname.split("/").filter((segment) => segment !== "");
  if (segments[0] === "l" && segments[1] === "meetup-join" && segments[2]) {
    const meetingId = meetingIdFromThread(segments[2]);
    return meetingId ? { kind: "meetup-join", meetingId, url } : null;
  }
  if (segments[0] === "meet" && segments.length === 2 && segments[1] && /^\d+$/.test(segments[1])) {
    return { kind: "meet", meetingId: segments[1], url };
  }
  return null;
}

/** The link of a scheduled meeting from its ids, on `base`. */
export function meetupJoinUrl(
  ids: { meetingId: string; tenantId: string; organizerId: string },
  base: string = DEFAULT_TEAMS_BASE_URL,
): string {
  // People paste the whole thread id as often as the part inside it.
  const meetingId = meetingIdFromThread(ids.meetingId) ?? ids.meetingId.trim();
  if (!meetingId) throw new Error("a Teams meetingId must not be empty");
  const thread = `19%3ameeting_${encodeURIComponent(meetingId)}%40thread.v2`;
  const context = encodeURIComponent(JSON.stringify({ Tid: ids.tenantId, Oid: ids.organizerId }));
  return `${base}/l/meetup-join/${thread}/0?context=${context}`;
}

/**
 * The URL the browser opens for this meeting: built from meetingId + tenantId + organizerId
 * when all three are given, else the pasted meetingUrl. A link on a real Teams host must be a
 * join link, and moves onto the base-URL override when one is set; a link on another host (one
 * the operator allowed, such as the mock) is opened as given.
 */
export function teamsMeetingUrl(info: MeetingInfo, baseOverride: string | undefined): string {
  const override = teamsBaseOverride(baseOverride);
  const { meetingId, tenantId, organizerId } = info;
  if (meetingId && tenantId && organizerId) {
    return meetupJoinUrl({ meetingId, tenantId, organizerId }, override ?? DEFAULT_TEAMS_BASE_URL);
  }
  if (!info.meetingUrl) {
    throw new Error("a Teams bot needs meetingId + tenantId + organizerId, or a meetingUrl");
  }
  let url: URL;
  try {
    url = new URL(info.meetingUrl);
  } catch {
    throw new Error(`not a URL: ${info.meetingUrl}`);
  }
  if (!isPlatformHost("teams", url.hostname)) return url.href;
  if (!parseTeamsLink(url.href)) {
    throw new Error(
      `not a Teams meeting link (expected /l/meetup-join/19%3ameeting_…%40thread.v2/… or /meet/<id>?p=…): ${url.href}`,
    );
  }
  return override ? `${override}${url.pathname}${url.search}${url.hash}` : url.href;
}

/**
 * The meeting URL with Teams' bot-identification token in its fragment (`#token=<TOKEN>`, as
 * registered bots join: docs/notes/getting-in-2026.md), replacing any fragment it had; unchanged
 * without a token. The fragment never leaves the browser in a request.
 */
export function withBotToken(url: string, token: string | undefined): string {
  if (!token) return url;
  const at = url.indexOf("#");
  return `${at < 0 ? url : url.slice(0, at)}#token=${encodeURIComponent(token)}`;
}
