import { z } from "zod";
import type { MeetingInfo } from "../../src/core/index.js";

/** Zoom's React web client; BotConfig platformUrls.zoomWeb (MEETBOT_ZOOM_WEB_BASE_URL on the server) points bots elsewhere (our mock). */
export const DEFAULT_ZOOM_WEB_BASE_URL = "https://app.zoom.us";

/**
 * A meeting id as people write it ("123 4567 8901", "123-4567-8901") becomes the digits Zoom
 * uses; Zoom's ids are 9 to 11 digits.
 */
const MeetingId = z
  .string()
  .transform((raw) => raw.replace(/[\s-]/g, ""))
  .pipe(z.string().regex(/^\d{9,11}$/, "a Zoom meeting id is 9 to 11 digits"));

export interface ZoomMeeting {
  meetingId: string;
  /** The link's `pwd` or the meetingPassword; absent for a meeting without one. */
  passcode?: string;
}

export function normalizeMeetingId(raw: string): string {
  const parsed = MeetingId.safeParse(raw);
  if (!parsed.success)
    throw new Error(`'${raw}' is not a Zoom meeting id: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/**
 * The meeting of a pasted link: the invite's `https://<sub>.zoom.us/j/<id>?pwd=...`, or a web
 * client link (`/wc/<id>/join`, the classic `/wc/join/<id>`), on any host.
 */
export function parseZoomLink(link: string): ZoomMeeting {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new Error(`'${link}' is not a URL`);
  }
  const path = url.pathname;
  const match =
    /^\/j\/([^/]+)\/?$/.exec(path) ??
    /^\/wc\/join\/([^/]+)\/?$/.exec(path) ??
    /^\/wc\/([^/]+)\/join\/?$/.exec(path);
  if (!match?.[1]) {
    throw new Error(`'${link}' is not a Zoom meeting link (like https://zoom.us/j/12345678901?pwd=...)`);
  }
  const meetingId = normalizeMeetingId(decodeURIComponent(match[1]));
  const pwd = url.searchParams.get("pwd");
  return pwd ? { meetingId, passcode: pwd } : { meetingId };
}

/**
 * The meeting from MeetingInfo: meetingId + meetingPassword, or a pasted link. When both are
 * given they must name the same meeting; meetingPassword wins over the link's pwd.
 */
export function zoomMeeting(info: MeetingInfo): ZoomMeeting {
  const fromLink = info.meetingUrl ? parseZoomLink(info.meetingUrl) : undefined;
  const meetingId = info.meetingId ? normalizeMeetingId(info.meetingId) : fromLink?.meetingId;
  if (!meetingId) throw new Error("a Zoom bot needs meetingInfo.meetingId or a meetingUrl");
  if (fromLink && fromLink.meetingId !== meetingId) {
    throw new Error(`meetingId ${meetingId} and meetingUrl (meeting ${fromLink.meetingId}) disagree`);
  }
  const passcode = info.meetingPassword || fromLink?.passcode;
  return passcode ? { meetingId, passcode } : { meetingId };
}

/** The web client's base: the override (an http(s) URL, checked by BotConfig), else Zoom's own. */
export function zoomWebBaseUrl(override: string | undefined): string {
  return (override || DEFAULT_ZOOM_WEB_BASE_URL).replace(/\/+$/, "");
}

/** `<base>/wc/<id>/join?pwd=<pwd>`: the page the bot opens. */
export function zoomWebClientUrl(meeting: ZoomMeeting, base: string): string {
  const url = new URL(`${base}/wc/${meeting.meetingId}/join`);
  if (meeting.passcode) url.searchParams.set("pwd", meeting.passcode);
  return url.toString();
}
