import type { ChildProcess } from "node:child_process";
import { access } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { spawnTied, tailOutput, terminate, waitForExit } from "../media/processes.js";
import { extractAudio } from "./audio.js";
import {
  EngineError,
  type Recognition,
  type RecognizedWord,
  type TranscribeRequest,
  type Transcriber,
} from "./types.js";

/** Where Debian's `pocketsphinx-en-us` puts the US-English model (the only one it ships). */
export const DEFAULT_MODEL_DIR = "/usr/share/pocketsphinx/model/en-us";
const BINARY = "pocketsphinx_continuous";
/** The only model there is; a request naming another one is a mistake worth saying so. */
const MODEL_NAME = "en-us";
const PROGRESS_INTERVAL_MS = 250;

export interface PocketsphinxOptions {
  /** A directory holding `en-us/` (acoustic model), `en-us.lm.bin` and `cmudict-en-us.dict`. */
  modelDir?: string;
  /** Where the temporary WAV goes (default: the OS's temporary directory). */
  tmpDir?: string;
}

/**
 * The embedded engine: CMU PocketSphinx run as a child process on the extracted 16 kHz WAV, its
 * `-time yes` output read line by line as it comes, so memory holds the words and nothing else.
 * pocketsphinx_continuous segments the audio itself at silences and keeps no state across those
 * segments, so its own memory stays flat however long the meeting (measured here: 120 MB peak RSS for 55 s of speech and 119 MB for 10 min).
 */
export function pocketsphinxTranscriber(options: PocketsphinxOptions = {}): Transcriber {
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  return {
    engine: "pocketsphinx",
    async transcribe(request: TranscribeRequest): Promise<Recognition> {
      const language = checkRequest(request);
      request.signal?.throwIfAborted();
      await checkModel(modelDir);
      const audio = await extractAudio(request.mediaPath, { signal: request.signal, tmpDir: options.tmpDir });
      try {
        // No audio at all: nothing to say, and pocketsphinx would fail on a header-only WAV.
        const words =
          audio.durationMs > 0 ? await decode(audio.path, audio.durationMs, modelDir, request) : [];
        request.onProgress?.(1);
        return {
          language,
          durationMs: audio.durationMs,
          words,
          text: words.map((word) => word.text).join(" "),
        };
      } finally {
        await audio.dispose();
      }
    },
  };
}

/** English only: the Debian package has one model, US English. Answers the language reported. */
function checkRequest(request: TranscribeRequest): string {
  const primary = (request.language ?? "en").toLowerCase().split(/[-_]/)[0];
  if (primary !== "en") {
    throw new EngineError(
      "language_unsupported",
      `the pocketsphinx engine only knows English, not "${request.language}"; choose a provider engine`,
      false,
    );
  }
  if (request.model !== undefined && request.model !== MODEL_NAME) {
    throw new EngineError(
      "model_unsupported",
      `the pocketsphinx engine has one model, "${MODEL_NAME}", not "${request.model}"`,
      false,
    );
  }
  return "en";
}

async function checkModel(modelDir: string): Promise<void> {
  for (const part of ["en-us", "en-us.lm.bin", "cmudict-en-us.dict"]) {
    try {
      await access(path.join(modelDir, part));
    } catch {
      throw new EngineError(
        "engine_unavailable",
        `the pocketsphinx model is incomplete: ${path.join(modelDir, part)} is missing (install pocketsphinx-en-us)`,
        false,
      );
    }
  }
}

async function decode(
  wavPath: string,
  durationMs: number,
  modelDir: string,
  request: TranscribeRequest,
): Promise<RecognizedWord[]> {
  const { signal, onProgress } = request;
  const args = [
    ...["-infile", wavPath, "-hmm", path.join(modelDir, "en-us")],
    ...["-lm", path.join(modelDir, "en-us.lm.bin"), "-dict", path.join(modelDir, "cmudict-en-us.dict")],
    ...["-logfn", "/dev/null", "-time", "yes"],
  ];
  let child: ChildProcess;
  try {
    child = spawnTied(BINARY, args, { stdio: ["ignore", "pipe", "pipe"], deathSignal: "KILL" });
  } catch (error) {
    throw unavailable(String(error));
  }
  const spawnError = new Promise<never>((_, reject) =>
    child.once("error", (error) => reject(unavailable(error.message))),
  );
  // Kept for the error message only; stdout is also read below for the words.
  const output = tailOutput(child, 10);
  const onAbort = () => void terminate(child, 1_000);
  signal?.addEventListener("abort", onAbort, { once: true });

  const words: RecognizedWord[] = [];
  let lastReport = 0;
  const lines = createInterface({ input: child.stdout! });
  lines.on("line", (line) => {
    const word = parseTimeLine(line);
    if (!word) return;
    words.push(word);
    const now = Date.now();
    if (onProgress && durationMs > 0 && now - lastReport >= PROGRESS_INTERVAL_MS) {
      lastReport = now;
      // Never 1 before the process has finished: the last word is not the end of the work.
      onProgress(Math.min(0.99, word.endMs / durationMs));
    }
  });
  const linesDone = new Promise<void>((resolve) => lines.once("close", resolve));
  try {
    const code = await Promise.race([waitForExit(child), spawnError]);
    signal?.throwIfAborted();
    // setpriv answers 127 when it cannot execute the program: not installed.
    if (code === 127) throw unavailable(output());
    if (code !== 0) {
      throw new EngineError("engine_failed", `${BINARY} exited with ${code}: ${output()}`, false);
    }
    await linesDone;
    return words;
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

function unavailable(reason: string): EngineError {
  return new EngineError(
    "engine_unavailable",
    `${BINARY} could not be started (install pocketsphinx): ${reason}`,
    false,
  );
}

const TIME_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?(?:e-?\d+)?)$/;

/**
 * One line of `-time yes` output: `word start end confidence`, times in seconds. Other lines (the
 * hypothesis of each segment, printed before its words) do not have that shape and give null, as
 * do the markers and fillers (`<s>`, `</s>`, `<sil>`, `[NOISE]`, `++UM++`). Alternate
 * pronunciations (`the(2)`) are the same word.
 *
 * The confidence is the word's posterior probability, which pocketsphinx prints already converted
 * from its log domain (it calls logmath_exp before printing): measured values lie in 0..1, e.g.
 * 0.958 for a clear "i" and 0.005 for an inserted "you", and a few a hair above 1 (1.0009, its
 * integer log arithmetic rounding), hence the clamp into 0..1. No other mapping is applied.
 */
export function parseTimeLine(line: string): RecognizedWord | null {
  const match = TIME_LINE.exec(line.trim());
  if (!match) return null;
  const [, token, start, end, confidence] = match as unknown as [string, string, string, string, string];
  if (/^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(token)) return null;
  const text = token.replace(/\(\d+\)$/, "");
  const probability = Number(confidence);
  return {
    text,
    startMs: Math.round(Number(start) * 1000),
    endMs: Math.round(Number(end) * 1000),
    confidence: Number.isFinite(probability) ? Math.min(1, Math.max(0, probability)) : null,
  };
}
