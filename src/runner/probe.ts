import { runToEnd } from "../media/processes.js";

export interface RecordingInspection {
  durationSeconds: number;
  streams: Array<{ type: string; codec: string; width?: number; height?: number }>;
  /** Mean audio level in dB (-91 is digital silence). */
  meanVolumeDb: number | null;
  maxVolumeDb: number | null;
  /**
   * How many video frames differ noticeably from the one before (the picture moves); null unless
   * asked for (`motion`), as it decodes the whole picture: 0.65 core-s for 15 s of 720p (measured).
   */
  changedFrames: number | null;
}

/**
 * What a person would check by ear and eye: both streams there, sound above silence, and with
 * `motion`, a picture that moves.
 */
export async function inspectRecording(
  path: string,
  opts: { motion?: boolean } = {},
): Promise<RecordingInspection> {
  const { stdout } = await runToEnd("ffprobe", [
    ...["-v", "error", "-show_entries", "format=duration:stream=codec_type,codec_name,width,height"],
    ...["-of", "json", path],
  ]);
  const probe = JSON.parse(stdout) as {
    format?: { duration?: string };
    streams?: Array<{ codec_type: string; codec_name: string; width?: number; height?: number }>;
  };
  const volume = await runToEnd(
    "ffmpeg",
    ["-hide_banner", "-nostats", "-i", path, "-vn", "-af", "volumedetect", "-f", "null", "-"],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  ).catch((error: { stderr?: string }) => ({ stderr: error.stderr ?? "" }));
  const scenes = opts.motion ? await countChangedFrames(path) : null;
  const db = (name: string) => {
    const match = new RegExp(`${name}: (-?[\\d.]+) dB`).exec(volume.stderr);
    return match ? Number(match[1]) : null;
  };
  return {
    durationSeconds: Number(probe.format?.duration ?? 0),
    streams: (probe.streams ?? []).map((s) => ({
      type: s.codec_type,
      codec: s.codec_name,
      ...(s.width ? { width: s.width } : {}),
      ...(s.height ? { height: s.height } : {}),
    })),
    meanVolumeDb: db("mean_volume"),
    maxVolumeDb: db("max_volume"),
    changedFrames: scenes,
  };
}

async function countChangedFrames(path: string): Promise<number> {
  const filter = "select='gt(scene,0.002)',metadata=print";
  const scenes = await runToEnd(
    "ffmpeg",
    ["-hide_banner", "-nostats", "-i", path, "-an", "-vf", filter, "-f", "null", "-"],
    { maxBuffer: 64 * 1024 * 1024 },
  ).catch((error: { stderr?: string }) => ({ stderr: error.stderr ?? "" }));
  return (scenes.stderr.match(/scene_score=/g) ?? []).length;
}
