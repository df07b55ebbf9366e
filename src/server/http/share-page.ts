import { clockTime, speakerLabel } from "../../intelligence/transcript-formats.js";
import type { SharedRecording } from "../schemas/index.js";
import { escapeHtml } from "./html.js";

/**
 * The share page allows nothing but its own inline style and media from this server: no script,
 * no frames, no forms, and the token in its address is never sent on as a Referer.
 */
export const SHARE_PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy":
    "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
} as const;

/** True when the client asks for HTML (a browser does; curl and fetch() do not by default). */
export function wantsHtml(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => {
    const [type, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    return type === "text/html" && (q === undefined || Number(q.slice(2)) > 0);
  });
}

/**
 * A self-contained page: the player streams through the token (`<token>/stream`, relative, so it
 * works under any prefix and host), then the title, date and length, then the transcript.
 */
export function sharePage(shared: SharedRecording, token: string): string {
  const title = shared.meetingTitle || "Meeting recording";
  const date = `${shared.createdAt.slice(0, 10)} ${shared.createdAt.slice(11, 16)} UTC`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
video{width:100%;background:#000;border-radius:6px}audio{width:100%}h1{font-size:1.4rem;margin:.2rem 0}
.meta{color:#666;margin:0 0 1rem}#transcript{margin-top:1.5rem;border-top:1px solid #ddd;padding-top:1rem}
#transcript p{margin:.4rem 0}#transcript time{color:#666;font-variant-numeric:tabular-nums}.who{font-weight:600}</style>
</head><body>
${player(shared.format, `${encodeURIComponent(token)}/stream`)}
<h1>${escapeHtml(title)}</h1>
<p class="meta"><time datetime="${escapeHtml(shared.createdAt)}">${escapeHtml(date)}</time> · ${formatDuration(shared.durationMs)}</p>
<section id="transcript"><h2>Transcript</h2>
${transcriptHtml(shared.transcript)}</section>
</body></html>
`;
}

/** A video player, or for sound alone (m4a, an audio-only bot) an audio player. */
function player(format: SharedRecording["format"], src: string): string {
  const element = format === "m4a" ? "audio" : "video";
  return `<${element} controls preload="metadata" src="${escapeHtml(src)}"></${element}>`;
}

/**
 * One paragraph per utterance: when it was said, who said it, what was said. The time is plain
 * text: a link could not seek the player without a script, and the page allows none. The name and
 * the words are each a `<bdi>`, isolated from each other and from the time: their direction is
 * their own, and a right-to-left override in a name (U+202E) cannot turn the words after it around.
 */
function transcriptHtml(transcript: SharedRecording["transcript"]): string {
  if (!transcript) return "<p>No transcript yet.</p>\n";
  const lines = transcript.utterances
    .filter((utterance) => utterance.text.trim() !== "")
    .map((utterance) => {
      const seconds = Math.floor(utterance.startMs / 1000);
      const time = `<time datetime="PT${seconds}S">${clockTime(utterance.startMs)}</time>`;
      const who = `<bdi class="who">${escapeHtml(speakerLabel(utterance))}</bdi>`;
      return `<p>${time} ${who} <bdi>${escapeHtml(utterance.text)}</bdi></p>\n`;
    });
  return lines.length ? lines.join("") : "<p>No speech was recognized.</p>\n";
}

/** 3723000 → "1:02:03"; 65000 → "1:05". */
function formatDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const [h, m, s] = [Math.floor(total / 3600), Math.floor(total / 60) % 60, total % 60];
  const pad = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}
