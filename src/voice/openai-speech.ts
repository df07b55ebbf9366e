import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { request } from "undici";
import { FfmpegError, renderClip } from "./clip.js";
import { type OpenAiSpeechSettings, type SpeechEngine, SpeechEngineError } from "./types.js";

export const DEFAULT_OPENAI_SPEECH_URL = "https://api.openai.com/v1";
/** OpenAI's current speech model; `tts-1`, `tts-1-hd` or a compatible server's own name work too. */
export const DEFAULT_OPENAI_SPEECH_MODEL = "gpt-4o-mini-tts";
export const DEFAULT_OPENAI_VOICE = "alloy";

/** How long the engine may take to start answering, and then between two parts of the answer. */
const TIMEOUT_MS = 60_000;
/** 4096 characters are about 5 minutes of speech: 14 MB as OpenAI's 24 kHz WAV. */
const MAX_ANSWER_BYTES = 64 * 1024 ** 2;
/** A voice is a name: OpenAI's (alloy, ash, coral, ...) or a compatible server's own. */
const VOICE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Speech from any OpenAI-compatible server: `POST {base}/audio/speech` with
 * `{model, input, voice, response_format: "wav"}`. The answer is kept in a temporary file (never
 * whole in memory) and decoded as WAV, and only as WAV, into the clip format. Which voices a
 * server has is its business: a name it does not know is its 4xx, answered as a 502.
 */
export function openAiSpeechEngine(settings: OpenAiSpeechSettings): SpeechEngine {
  const url = `${settings.baseUrl.replace(/\/+$/, "")}/audio/speech`;
  return {
    name: "openai",
    defaultVoice: DEFAULT_OPENAI_VOICE,
    voiceProblem(voice) {
      return VOICE_NAME.test(voice) ? null : "A voice is 1 to 64 letters, digits, '.', '_' or '-'";
    },
    async synthesize(text, voice, output) {
      const dir = await mkdtemp(path.join(tmpdir(), "meetbot-speech-"));
      try {
        const answer = path.join(dir, "speech.wav");
        await fetchSpeech(url, settings, { model: settings.model, input: text, voice }, answer);
        return await renderClip(["-protocol_whitelist", "file", "-f", "wav", "-i", answer], output);
      } catch (err) {
        if (err instanceof FfmpegError) {
          throw new SpeechEngineError(
            `TTS engine openai answered audio that is not a WAV ffmpeg reads: ${err.message}`,
          );
        }
        throw err;
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Posts the request and streams a 200's body into `file`; anything else is a SpeechEngineError. */
async function fetchSpeech(
  url: string,
  settings: OpenAiSpeechSettings,
  body: { model: string; input: string; voice: string },
  file: string,
): Promise<void> {
  let response;
  try {
    response = await request(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "audio/wav",
        ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
      },
      body: JSON.stringify({ ...body, response_format: "wav" }),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
  } catch (err) {
    throw new SpeechEngineError(`TTS engine openai could not be reached: ${transportProblem(err)}`);
  }
  if (response.statusCode !== 200) {
    // The answer's text may quote the key (OpenAI's 401 shows part of it): the log gets it with
    // the key cut out, the caller only the status.
    const text = await response.body.text().catch(() => "");
    const logged = settings.apiKey ? text.split(settings.apiKey).join("[key]") : text;
    throw new SpeechEngineError(
      `TTS engine openai answered HTTP ${response.statusCode}`,
      logged.slice(0, 500),
    );
  }
  let received = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (received > MAX_ANSWER_BYTES) {
        callback(new SpeechEngineError(`TTS engine openai answered more than ${MAX_ANSWER_BYTES} bytes`));
      } else callback(null, chunk);
    },
  });
  try {
    await pipeline(response.body, limit, createWriteStream(file, { mode: 0o600 }));
  } catch (err) {
    if (err instanceof SpeechEngineError) throw err;
    throw new SpeechEngineError(`TTS engine openai broke off its answer: ${transportProblem(err)}`);
  }
}

/** What went wrong with the connection, without a URL or header in it. */
function transportProblem(err: unknown): string {
  const code = (err as { code?: string }).code;
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") {
    return `no answer within ${TIMEOUT_MS} ms`;
  }
  if (code === "UND_ERR_CONNECT_TIMEOUT") return "the connection timed out";
  return code ?? (err as Error).message ?? String(err);
}
