import { z } from "zod";
import { OutputImage } from "./commands.js";
import { AccountCheckTask, RunnerLogin } from "./login.js";
import { MeetingInfo, type Platform } from "./platform.js";

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;
export const DEFAULT_AUTOMATIC_LEAVE_MS = 300_000;
export const DEFAULT_MAX_DURATION_MS = 4 * 3_600_000;
export const DEFAULT_CHROMIUM_PATH = "/usr/bin/chromium";
export const DEFAULT_FINAL_DELIVERY_TIMEOUT_MS = 120_000;
export const DEFAULT_RECORDING_SEGMENT_INTERVAL_MS = 5_000;
/** pino's levels. */
export const RUNNER_LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export const DEFAULT_SILENCE_TIMEOUT_MS = 1_800_000;

/**
 * The RMS level (dBFS, over half-second windows of the recorded audio) at or below which the
 * call counts as silent for `silenceTimeout`. Speech is about -20 to -35 dBFS and the mock's
 * tones about -20; a capture with nothing playing reads -91 or -inf. -60 sits 25 dB under quiet
 * speech and above digital silence and the hiss of a muted or dead call, so any voice resets the
 * clock; a room whose background noise stays above it is never left for silence, the safe side.
 */
export const SILENCE_LEVEL_DBFS = -60;

/** All durations are milliseconds (the spec leaves the unit open; we chose ms everywhere). */
/**
 * Words in the names other meeting bots join under (notetakers, recorders): a participant whose
 * name holds one of them as a whole word is a bot for automaticLeave.onlyBotsTimeout. Only words
 * no person is named: "Grain", "Fellow" or "Jamie" would make people bots.
 */
export const DEFAULT_BOT_NAMES = [
  "bot",
  "notetaker",
  "note taker",
  "recorder",
  "fireflies",
  "otter",
  "fathom",
  "read.ai",
  "tactiq",
  "tldv",
  "tl;dv",
  "avoma",
  "airgram",
  "sembly",
  "meetgeek",
  "supernormal",
  "bluedot",
  "krisp",
] as const;
export const DEFAULT_ONLY_BOTS_TIMEOUT_MS = 60_000;

export const AutomaticLeave = z.object({
  waitingRoomTimeout: z.number().int().min(1_000).max(86_400_000).default(DEFAULT_AUTOMATIC_LEAVE_MS),
  noOneJoinedTimeout: z.number().int().min(1_000).max(86_400_000).default(DEFAULT_AUTOMATIC_LEAVE_MS),
  everyoneLeftTimeout: z.number().int().min(1_000).max(86_400_000).default(DEFAULT_AUTOMATIC_LEAVE_MS),
  /** Ours, beyond the spec's three: the longest a bot stays in a call (CALL_ENDED MAX_DURATION). */
  maxDuration: z.number().int().min(1_000).max(86_400_000).default(DEFAULT_MAX_DURATION_MS),
  /** Ours: leave once the recorded sound stays at or below SILENCE_LEVEL_DBFS this long (CALL_ENDED SILENCE). */
  silenceTimeout: z
    .number()
    .int()
    .min(0)
    .max(86_400_000)
    // Only once the checks above passed: one message per bad value.
    .refine((ms) => ms === 0 || ms >= 1_000, {
      message: "must be 0 (never leave for silence) or at least 1000",
      when: (payload) => payload.issues.length === 0,
    })
    .describe(
      `ms; leave after this long with no recorded sound above ${SILENCE_LEVEL_DBFS} dBFS (CALL_ENDED SILENCE); 0 = never`,
    )
    .default(DEFAULT_SILENCE_TIMEOUT_MS),
  /** Ours: words that make a participant a bot (see DEFAULT_BOT_NAMES); [] = nobody is. */
  botNames: z
    .array(z.string().trim().min(1).max(100))
    .max(100)
    .describe("words (case-insensitive, matched as whole words) in the names other bots join under")
    .default([...DEFAULT_BOT_NAMES]),
  /** Ours: leave once everyone in the call has been a bot this long (CALL_ENDED ONLY_BOTS_LEFT). */
  onlyBotsTimeout: z
    .number()
    .int()
    .min(0)
    .max(86_400_000)
    .refine((ms) => ms === 0 || ms >= 1_000, {
      message: "must be 0 (bots count as people) or at least 1000",
      when: (payload) => payload.issues.length === 0,
    })
    .describe("ms; leave after this long with only bots in the call (CALL_ENDED ONLY_BOTS_LEFT); 0 = off")
    .default(DEFAULT_ONLY_BOTS_TIMEOUT_MS),
});
export type AutomaticLeave = z.infer<typeof AutomaticLeave>;

export const RecordingOptions = z.object({
  width: z.number().int().min(320).max(3840).default(1280),
  height: z.number().int().min(240).max(2160).default(720),
  frameRate: z.number().int().min(1).max(60).default(25),
  /**
   * Ours. false: an audio-only bot. No screen capture and no video encoder; the browser shows on
   * the smallest display the meeting pages take (AUDIO_ONLY_SCREEN) and turns incoming video off
   * where the platform lets it; the recording is AAC in fragmented MP4 (format `m4a`).
   */
  video: z.boolean().default(true),
});
export type RecordingOptions = z.infer<typeof RecordingOptions>;

/**
 * The display (and so the kiosk window) of an audio-only bot's browser: nothing of it is recorded,
 * and every pixel less is less for Chromium to lay out and composite. 640x360 is the smallest
 * size that still shows the meeting pages' in-call controls (Leave, People, More) in their
 * toolbars rather than folded into overflow menus, which the adapters would then have to open.
 */
export const AUDIO_ONLY_SCREEN = { width: 640, height: 360 } as const;

/** The size of the display a bot's browser shows on: the recording's, or AUDIO_ONLY_SCREEN. */
export function screenOf(recording: RecordingOptions): { width: number; height: number } {
  return recording.video ? { width: recording.width, height: recording.height } : AUDIO_ONLY_SCREEN;
}

const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

/**
 * What the operator decides for every runner. `meetbot serve` takes it from its own environment
 * (MEETBOT_CHROMIUM_PATH, MEETBOT_ZOOM_WEB_BASE_URL, ...) and puts it in each BotConfig: the
 * runner reads no environment of its own, and gets none of the server's secrets.
 */
export const RunnerSettings = z.object({
  browser: z.object({ executablePath: z.string().min(1).default(DEFAULT_CHROMIUM_PATH) }).prefault({}),
  /** Origins that replace the platforms' own web clients (a mock, a proxy); unset: the real sites. */
  platformUrls: z.object({ zoomWeb: HttpUrl.optional(), teamsWeb: HttpUrl.optional() }).prefault({}),
  logLevel: z.enum(RUNNER_LOG_LEVELS).default("info"),
  /**
   * How long a finished runner keeps trying to deliver its last events to an unreachable control
   * plane before it exits. They stay in the spool file either way.
   */
  finalDeliveryTimeout: z.number().int().min(0).max(86_400_000).default(DEFAULT_FINAL_DELIVERY_TIMEOUT_MS),
  /**
   * How often the runner uploads what it has recorded since the last segment, during the call: a
   * runner that dies loses at most this much. 0: one upload at the end only.
   */
  recordingSegmentInterval: z
    .number()
    .int()
    .min(0)
    .max(600_000)
    .refine((ms) => ms === 0 || ms >= 1_000, {
      message: "must be 0 (no segments) or at least 1000",
      when: (payload) => payload.issues.length === 0,
    })
    .default(DEFAULT_RECORDING_SEGMENT_INTERVAL_MS),
});
export type RunnerSettings = z.infer<typeof RunnerSettings>;
export type RunnerSettingsInput = z.input<typeof RunnerSettings>;
export type PlatformUrls = RunnerSettings["platformUrls"];

/** Platforms' chat length limits (characters): a longer message is refused before it is sent. */
export const CHAT_MAX_LENGTH: Record<Platform, number> = { google: 500, zoom: 4096, teams: 4096 };
const CHAT_PLATFORM_NAMES: Record<Platform, string> = { google: "Meet", zoom: "Zoom", teams: "Teams" };

/** Why the platform's chat would refuse `text` (too long), or null when it takes it. */
export function chatLengthProblem(platform: Platform, text: string): string | null {
  const length = [...text].length;
  const max = CHAT_MAX_LENGTH[platform];
  if (length <= max) return null;
  return `${CHAT_PLATFORM_NAMES[platform]} chat messages are at most ${max} characters (this one is ${length})`;
}

/**
 * A transcript while people talk (bot option, ours): `captions` turns on the platform's own
 * captions for the bot (the others do not see them) and reads them as they grow; `pocketsphinx`
 * recognizes the bot's own audio in the runner. With `fallback`, a bot whose captions cannot be
 * turned on switches to pocketsphinx (and says so in a `transcript.source` event).
 */
export const LiveTranscriptOptions = z.object({
  source: z.enum(["captions", "pocketsphinx"]),
  // Before the optional field: the answers' serializer writes required fields first, as zod does.
  fallback: z.boolean().default(false),
  /** A BCP 47 code (`en-US`, `de`); the captions' language where the platform lets the bot pick. */
  language: z
    .string()
    .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, "must be a language code such as en or en-US")
    .max(35)
    .optional(),
});
export type LiveTranscriptOptions = z.infer<typeof LiveTranscriptOptions>;

/** The meeting's chat (bot option, ours): `onJoin`, a message the bot sends once it is in the call. */
export const ChatOptions = z.object({
  onJoin: z.string().trim().min(1).max(4096).optional(),
});
export type ChatOptions = z.infer<typeof ChatOptions>;

/**
 * What the bot sends into the meeting (bot option, ours). `keepMicOn`: once the bot has spoken,
 * its microphone stays on (a voice agent's turn-taking stays quick); by default it unmutes only
 * while a sound plays. The microphone only ever carries what the bot says. `image`: a picture the
 * bot's camera shows from its join on (a logo, a "recording" card); the API takes it as a data
 * URL and stores it as the server's PNG, which is what this names (core/commands.ts OutputImage).
 */
export const OutputOptions = z.object({
  keepMicOn: z.boolean().optional(),
  image: OutputImage.optional(),
});
export type OutputOptions = z.infer<typeof OutputOptions>;

/** Sample rates an audio stream (BotConfig.audioStream) can carry, in Hz. */
export const AUDIO_STREAM_SAMPLE_RATES = [16_000, 24_000] as const;

/**
 * A live audio channel to an agent (bot option, ours; docs/api.md "A live audio channel"): once in
 * the call the runner opens a WebSocket to `url`, sends the meeting's sound (16-bit mono PCM at
 * `sampleRate`, binary frames) and its speaker and participant events (JSON frames), and plays the
 * binary frames it receives into the meeting. `token`, when given, goes as
 * `Authorization: Bearer <token>` on the WebSocket's opening request; a secret, like `login`.
 */
export const AudioStreamOptions = z.object({
  url: z.url({ protocol: /^wss?$/, error: "must be a ws:// or wss:// URL" }).max(2048),
  sampleRate: z
    .union(AUDIO_STREAM_SAMPLE_RATES.map((rate) => z.literal(rate)))
    .describe("Hz of the PCM both ways")
    .default(16_000),
  token: z.string().min(1).max(4096).optional(),
});
export type AudioStreamOptions = z.infer<typeof AudioStreamOptions>;

/**
 * The runner's only input. The server builds it on deploy; a developer can write one by hand
 * for `meetbot run --config bot.json`.
 */
export const BotConfig = z.object({
  botId: z.number().int().positive(),
  meetingInfo: MeetingInfo,
  botDisplayName: z.string().min(1).max(100).default("Meetbot"),
  meetingTitle: z.string().max(300).default(""),
  heartbeatInterval: z.number().int().min(500).max(3_600_000).default(DEFAULT_HEARTBEAT_INTERVAL_MS),
  automaticLeave: AutomaticLeave.prefault({}),
  recording: RecordingOptions.prefault({}),
  /** Absent: no live transcript (the recording is still transcribed after the call, on request). */
  liveTranscript: LiveTranscriptOptions.optional(),
  chat: ChatOptions.prefault({}),
  output: OutputOptions.prefault({}),
  /**
   * Absent: no audio stream. `allowPrivateTargets`: the server's MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS,
   * so the runner vets the addresses it connects to by the same rule as the server's webhooks.
   */
  audioStream: AudioStreamOptions.extend({ allowPrivateTargets: z.boolean().default(false) }).optional(),
  /** Where lifecycle events go: POST {baseUrl}/v1/bot-callbacks/{botId}/event. */
  callback: z.object({
    baseUrl: HttpUrl,
    /** Per-bot secret, sent as `Authorization: Bearer <token>` on callbacks and the upload. */
    token: z.string().min(16),
    /**
     * PEM certificates trusted for baseUrl and upload.url besides the usual CAs: the server's own
     * when it serves HTTPS itself, so that a self-signed certificate needs no setup on runners.
     */
    ca: z.string().includes("-----BEGIN CERTIFICATE-----", { error: "must be PEM certificates" }).optional(),
  }),
  /** Where the finished recording is PUT (streamed). */
  upload: z.object({ url: HttpUrl }),
  /** Runner scratch space (spool, recording). Defaults to a per-bot folder under the OS temp dir. */
  workDir: z.string().min(1).optional(),
  /**
   * Sign in with this account's session (src/core/login.ts). Absent: join anonymously, as a guest.
   * A secret: it must never be logged, reported or saved in an artifact or trace.
   */
  login: RunnerLogin.optional(),
  /**
   * Teams bot identification: a token the server mints (client-credentials flow, scope
   * https://ic3.teams.office.com/.default) just before deploy. The runner opens the Teams meeting
   * URL with `#token=<TOKEN>`, so Teams files the bot in its ordinary lobby, not under "Suspected
   * threats". A secret like `login`: never logged, reported or kept in an artifact or trace.
   */
  teamsBotToken: z.string().min(1).max(16_384).optional(),
  /**
   * Present: this runner only checks the `login`'s session (POST /v1/bot-accounts/{id}/check). It
   * opens the meeting with the session, confirms the pre-join shows the account exactly as a
   * signed-in bot does, reports the answer to `resultUrl` with the callback token, and exits: it
   * never joins, records or sends bot events. `botId` is then the check's id, not a bot's.
   */
  accountCheck: AccountCheckTask.optional(),
  ...RunnerSettings.shape,
});
export type BotConfig = z.infer<typeof BotConfig>;
export type BotConfigInput = z.input<typeof BotConfig>;

export function callbackEventUrl(config: Pick<BotConfig, "botId" | "callback">): string {
  return new URL(`/v1/bot-callbacks/${config.botId}/event`, config.callback.baseUrl).toString();
}
