/**
 * A small client of the /v1 API, used by the demo, the benchmarks and the end-to-end tests: it
 * speaks to the server exactly as a user's program would, over HTTP.
 */
import type { z } from "zod";
import type { AnswerOf, BotApiResponses } from "../server/schemas/responses.js";

/** The answer of an operation of the /v1 API: the server's own schema, so the two cannot drift. */
export type Answer<Operation extends keyof BotApiResponses> = z.output<BotApiResponses[Operation]>;
export type BotView = Answer<"GET /v1/bots/{id}">;
export type BotEventView = Answer<"GET /v1/bots/{id}/events">[number];
export type CommandView = Answer<"GET /v1/bots/{id}/commands/{commandId}">;
export type ChatMessageView = Answer<"GET /v1/bots/{id}/chat-messages">["messages"][number];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    super(`${what}: HTTP ${status} ${JSON.stringify(body)}`);
  }
}

const MAX_RATE_LIMIT_WAITS = 3;

export class ApiClient {
  private token = "";

  constructor(readonly baseUrl: string) {}

  async register(email: string, password: string, name: string): Promise<void> {
    const result = await this.call("POST", "/v1/auth/register", {
      email,
      password,
      name,
    });
    this.token = result.access_token;
  }

  /** The secret that signs deliveries to this user's bots' callbackUrl. */
  signingSecret() {
    return this.call("GET", "/v1/webhooks/signing-secret");
  }

  /** A new API key of this user (its secret is shown once, in `key`). */
  createApiKey(name: string) {
    return this.call("POST", "/v1/api-keys", { name });
  }

  createBotAccount(body: Record<string, unknown>) {
    return this.call("POST", "/v1/bot-accounts", body);
  }

  botAccounts() {
    return this.call("GET", "/v1/bot-accounts?page_size=100");
  }

  createBot(body: Record<string, unknown>) {
    return this.call("POST", "/v1/bots", body);
  }

  deploy(botId: number) {
    return this.call("POST", `/v1/bots/${botId}/deploy`);
  }

  kill(botId: number) {
    return this.call("POST", `/v1/bots/${botId}/kill`);
  }

  /** Asks a bot in a call to leave it (a command; follow it with `command`). */
  leave(botId: number) {
    return this.call("POST", `/v1/bots/${botId}/leave`);
  }

  /** Pauses a bot's recording: the paused time is left out of it (a command; follow it with `command`). */
  pauseRecording(botId: number) {
    return this.call("POST", `/v1/bots/${botId}/pause-recording`);
  }

  /** Resumes a bot's paused recording (a command; follow it with `command`). */
  resumeRecording(botId: number) {
    return this.call("POST", `/v1/bots/${botId}/resume-recording`);
  }

  command(botId: number, commandId: number) {
    return this.call("GET", `/v1/bots/${botId}/commands/${commandId}`);
  }

  /** Asks a bot in a call to send `text` to the meeting's chat (a command; follow it with `command`). */
  sendChat(botId: number, text: string) {
    return this.call("POST", `/v1/bots/${botId}/chat`, { text });
  }

  /** Asks a bot in a call to say `text` (a play_audio command; follow it with `command`). */
  speak(botId: number, text: string, voice?: string) {
    return this.call("POST", `/v1/bots/${botId}/speak`, { text, ...(voice ? { voice } : {}) });
  }

  /** Asks a bot in a call to play an audio file (WAV, MP3 or OGG) into the meeting. */
  playAudio(botId: number, bytes: Buffer, contentType: string): Promise<CommandView> {
    return this.upload(`/v1/bots/${botId}/output-audio`, bytes, contentType);
  }

  /** Stops what the bot plays and drops the sounds queued before this (a stop_audio command). */
  stopAudio(botId: number) {
    return this.call("DELETE", `/v1/bots/${botId}/output-audio`);
  }

  /** Shows a picture (PNG or JPEG) on the bot's camera, turning it on (a show_image command). */
  showImage(botId: number, bytes: Buffer, contentType: "image/png" | "image/jpeg"): Promise<CommandView> {
    return this.upload(`/v1/bots/${botId}/output-image`, bytes, contentType);
  }

  /** Turns the bot's camera off (a hide_image command). */
  hideImage(botId: number) {
    return this.call("DELETE", `/v1/bots/${botId}/output-image`);
  }

  /** POSTs a file as the body, with its content type; answers the command it queued. */
  private async upload(path: string, bytes: Buffer, contentType: string): Promise<CommandView> {
    const response = await fetch(new URL(path, this.baseUrl), {
      method: "POST",
      headers: { authorization: `Bearer ${this.token}`, "content-type": contentType },
      body: new Blob([new Uint8Array(bytes)]),
    });
    const parsed = (await response.json()) as CommandView;
    if (!response.ok) throw new ApiError(response.status, parsed, `POST ${path}`);
    return parsed;
  }

  /** What a running bot's page shows now: a PNG, and when the bot took it. */
  async screenshot(botId: number): Promise<{ png: Buffer; takenAt: string }> {
    const path = `/v1/bots/${botId}/screenshot`;
    const response = await this.fetchRaw(path);
    if (!response.ok) throw new ApiError(response.status, await response.json(), `GET ${path}`);
    return {
      png: Buffer.from(await response.arrayBuffer()),
      takenAt: response.headers.get("x-screenshot-taken-at") ?? "",
    };
  }

  /** The meeting's chat as the bot read it, oldest first (one page of up to `pageSize`). */
  chatMessages(botId: number, pageSize = 100) {
    return this.call("GET", `/v1/bots/${botId}/chat-messages?page_size=${pageSize}`);
  }

  /** The caller's bearer token, for a stream the caller opens itself (GET /v1/bots/{id}/live). */
  get bearerToken(): string {
    return this.token;
  }

  bot(botId: number) {
    return this.call("GET", `/v1/bots/${botId}`);
  }

  botEvents(botId: number) {
    return this.call("GET", `/v1/bots/${botId}/events`);
  }

  botLogs(botId: number) {
    return this.call("GET", `/v1/bots/${botId}/logs`);
  }

  events(query: Record<string, string | number>) {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
    return this.call("GET", `/v1/events?${qs}`);
  }

  recording(botId: number) {
    return this.call("GET", `/v1/recordings/${botId}`);
  }

  recordingDownload(botId: number) {
    return this.call("GET", `/v1/recordings/${botId}/download`);
  }

  /** Any JSON route with the caller's credential (e.g. bot accounts); a non-2xx answer throws ApiError. */
  send<Method extends string, Path extends string>(method: Method, path: Path, body?: unknown) {
    return this.call(method, path, body);
  }

  /** A GET with the caller's credential, answered raw (for files such as failure artifacts). */
  fetchRaw(path: string): Promise<Response> {
    return fetch(new URL(path, this.baseUrl), { headers: { authorization: `Bearer ${this.token}` } });
  }

  /** Polls the bot until it reaches one of `statuses`; calls `onChange` with each new status. */
  async waitForStatus(
    botId: number,
    statuses: readonly string[],
    opts: {
      timeoutMs: number;
      intervalMs?: number;
      onChange?: (bot: BotView) => void;
      /** Called on every poll, e.g. to show new events while waiting. */
      onPoll?: (bot: BotView) => Promise<void>;
    },
  ): Promise<BotView> {
    const deadline = Date.now() + opts.timeoutMs;
    let last = "";
    for (;;) {
      const bot = await this.bot(botId);
      if (bot.status !== last) {
        last = bot.status;
        opts.onChange?.(bot);
      }
      await opts.onPoll?.(bot);
      if (statuses.includes(bot.status)) return bot;
      if (Date.now() > deadline) {
        throw new Error(
          `bot ${botId} still ${bot.status} after ${opts.timeoutMs} ms (wanted ${statuses.join("|")})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 200));
    }
  }

  /** `path` picks its operation (ids filled in), and with it the type of the answer. */
  private async call<Method extends string, Path extends string>(
    method: Method,
    path: Path,
    body?: unknown,
  ): Promise<AnswerOf<BotApiResponses, Method, Path>> {
    let response: Response;
    for (let attempt = 1; ; attempt++) {
      response = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: {
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      // Rate limited: wait as long as the server asks (a few times), rather than fail the caller.
      if (response.status !== 429 || attempt > MAX_RATE_LIMIT_WAITS) break;
      const seconds = Number(response.headers.get("retry-after") ?? "1");
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 1000 * (Number.isFinite(seconds) ? seconds : 1)));
    }
    const text = await response.text();
    const parsed = text ? JSON.parse(text) : null;
    if (!response.ok) throw new ApiError(response.status, parsed, `${method} ${path}`);
    return parsed as AnswerOf<BotApiResponses, Method, Path>;
  }
}
