import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { FfmpegError, renderClip } from "./clip.js";
import { type SpeechEngine, SpeechEngineError } from "./types.js";

/** The voices Debian's ffmpeg has built in (`ffmpeg -f lavfi -i flite=list_voices=1`). */
export const FLITE_VOICES = ["awb", "kal", "kal16", "rms", "slt"] as const;

/**
 * The clearest of them, measured: 12 meeting sentences said by each voice and transcribed by the
 * embedded pocketsphinx engine, mean word accuracy rms 0.88, slt 0.84, awb 0.79, kal16 0.65,
 * kal 0.07 (flite's own default is an 8 kHz voice no recognizer makes out).
 */
export const DEFAULT_FLITE_VOICE = "rms";

/**
 * Anything in a filter graph's option value but these would need escaping twice over (the option
 * and the graph); the text file's path is made here, so it never has them unless TMPDIR does.
 */
const PLAIN_PATH = /^[A-Za-z0-9/._-]+$/;

/**
 * Offline speech with flite, through ffmpeg's `flite` source filter. The text goes in a file of
 * its own (`textfile=`), never on a command line, where it would need escaping and show in `ps`.
 */
export function fliteEngine(): SpeechEngine {
  return { name: "flite", defaultVoice: DEFAULT_FLITE_VOICE, voiceProblem, synthesize };
}

function voiceProblem(voice: string): string | null {
  if ((FLITE_VOICES as readonly string[]).includes(voice)) return null;
  return `Unknown voice "${voice}": the flite engine has ${FLITE_VOICES.join(", ")}`;
}

async function synthesize(text: string, voice: string, output: string): Promise<number> {
  // Only a voice of the list goes into the filter graph, where anything else could be syntax.
  if (voiceProblem(voice)) throw new Error(`not a flite voice: ${voice}`);
  const dir = await mkdtemp(path.join(tmpdir(), "meetbot-speak-"));
  try {
    const textFile = path.join(dir, "text.txt");
    if (!PLAIN_PATH.test(textFile)) {
      throw new SpeechEngineError(
        "flite: the temporary directory's path has characters ffmpeg's filter graph reads as syntax; set TMPDIR to a plain path",
      );
    }
    await writeFile(textFile, text, { mode: 0o600 });
    return await renderClip(["-f", "lavfi", "-i", `flite=textfile=${textFile}:voice=${voice}`], output);
  } catch (err) {
    if (err instanceof FfmpegError) throw new SpeechEngineError(`flite failed: ${err.message}`);
    throw err;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
