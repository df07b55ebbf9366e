import {
  isPlatformHost,
  type MeetingInfo,
  MeetingInfo as MeetingInfoSchema,
  PLATFORMS,
} from "../../core/index.js";

/**
 * The meeting a calendar event's texts link to: the first http(s) URL on a real platform's host
 * (core/platform.ts) that names a meeting, as the MeetingInfo a bot is created with. Links to a
 * platform's home or help pages are not meetings: Meet needs a meeting code in the path, Zoom a
 * /j/, /w/, /s/ or /my/ path, Teams a meetup-join or /meet/ link.
 */
export interface MeetingLink {
  meetingInfo: MeetingInfo;
  /** The same meeting gives the same key, however the link is written (two feeds, one meeting). */
  key: string;
}

const URL_IN_TEXT = /https?:\/\/[^\s<>"'`)\]}]+/gi;

export function findMeetingLink(texts: readonly string[]): MeetingLink | null {
  for (const text of texts) {
    for (const match of text.matchAll(URL_IN_TEXT)) {
      const link = meetingLink(match[0].replace(/[.,;:!?]+$/, ""));
      if (link) return link;
    }
  }
  return null;
}

function meetingLink(text: string): MeetingLink | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const platform = PLATFORMS.find((p) => isPlatformHost(p, url.hostname));
  if (!platform) return null;
  const path = url.pathname.replace(/\/+$/, "");
  const key = meetingKey(platform, path);
  if (!key) return null;
  const info = MeetingInfoSchema.safeParse({ platform, meetingUrl: url.href });
  return info.success ? { meetingInfo: info.data, key } : null;
}

/** The meeting's identity in its link, or null when the link names no meeting. */
function meetingKey(platform: MeetingInfo["platform"], path: string): string | null {
  if (platform === "google") {
    const code = /^\/(?:lookup\/)?([a-z0-9-]{3,})$/i.exec(path)?.[1];
    return code ? `google:${code.toLowerCase()}` : null;
  }
  if (platform === "zoom") {
    const id = /^\/(?:j|w|s|wc\/join|my)\/([\w.-]+)/i.exec(path)?.[1];
    return id ? `zoom:${id.toLowerCase()}` : null;
  }
  if (!/^\/(l\/meetup-join|meet)\//i.test(path)) return null;
  try {
    return `teams:${decodeURIComponent(path)}`;
  } catch {
    return `teams:${path}`; // not percent-encoded as it should be: compared as written
  }
}
