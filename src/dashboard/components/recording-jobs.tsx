import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { SummaryJobStatus, TranscriptJobStatus } from "../../server/schemas/index.js";
import { api, ApiFailure } from "../api.js";
import { StatusBadge } from "./ui.js";

export type JobStatus = TranscriptJobStatus | SummaryJobStatus;

/** How often a running job's status is asked for. */
const POLL_MS = 1000;

/** The two kinds of content made from a recording, and where the API keeps each. */
const PATHS = {
  transcript: (botId: number) => ({
    status: `/v1/transcripts/${botId}/status`,
    result: `/v1/transcripts/${botId}`,
    start: `/v1/transcripts/${botId}/transcribe`,
  }),
  summary: (botId: number) => ({
    status: `/v1/summaries/${botId}/status`,
    result: `/v1/summaries/${botId}`,
    start: `/v1/summaries/${botId}/summarize`,
  }),
};

export interface ContentJob<T> {
  /** undefined while loading; null when none was ever asked for. */
  status: JobStatus | null | undefined;
  /** The latest finished result (kept while a new one is made), if any. */
  result: T | undefined;
  /** Why loading, polling or starting failed (the job's own failure is in status.error). */
  error: string | undefined;
  starting: boolean;
  /** Asks for a new one; a 409 (one already on its way) follows that one instead. */
  start(): Promise<void>;
  reload(): Promise<void>;
}

export function isRunning(status: JobStatus | null | undefined): boolean {
  return status?.status === "queued" || status?.status === "processing";
}

/** A GET whose 404 means "none yet". */
export async function getOrNull<T>(path: string): Promise<T | null> {
  try {
    return await api<T>("GET", path);
  } catch (failure) {
    if (failure instanceof ApiFailure && failure.status === 404) return null;
    throw failure;
  }
}

/**
 * A bot's transcript or summary: its job's status, polled while it runs, and the result, fetched
 * again when the job settles. `onSettled` hears when a running job finishes or fails.
 */
export function useContentJob<T>(
  kind: keyof typeof PATHS,
  botId: number,
  /** Whether one was ever asked for (the recording says): if not, nothing is asked of the API at first. */
  requested: boolean,
  onSettled?: () => void,
): ContentJob<T> {
  const paths = PATHS[kind](botId);
  const [status, setStatus] = useState<JobStatus | null>();
  const [result, setResult] = useState<T>();
  const [error, setError] = useState<string>();
  const [starting, setStarting] = useState(false);
  const [polls, setPolls] = useState(0);
  const settled = useRef(onSettled);
  settled.current = onSettled;

  const fetchResult = useCallback(async () => {
    setResult((await getOrNull<T>(paths.result)) ?? undefined);
  }, [paths.result]);

  const reload = useCallback(async () => {
    try {
      setStatus(await getOrNull<JobStatus>(paths.status));
      await fetchResult();
      setError(undefined);
    } catch (failure) {
      setError((failure as Error).message);
    }
  }, [paths.status, fetchResult]);

  useEffect(() => {
    if (requested) void reload();
    else setStatus(null);
  }, [reload, requested]);

  const running = isRunning(status);
  useEffect(() => {
    if (!running) return;
    const timer = window.setTimeout(async () => {
      try {
        const next = await getOrNull<JobStatus>(paths.status);
        setStatus(next);
        setError(undefined);
        if (!isRunning(next)) {
          await fetchResult();
          settled.current?.();
        }
      } catch (failure) {
        // Shown, and asked again at the next tick: a blip of the network does not end the watch.
        setError((failure as Error).message);
      }
      setPolls((n) => n + 1);
    }, POLL_MS);
    return () => window.clearTimeout(timer);
  }, [running, polls, paths.status, fetchResult]);

  const start = useCallback(async () => {
    setStarting(true);
    setError(undefined);
    try {
      try {
        setStatus(await api<JobStatus>("POST", paths.start));
      } catch (failure) {
        // 409: one is queued or processing already; follow it rather than report a failure.
        if (!(failure instanceof ApiFailure && failure.status === 409)) throw failure;
        setStatus(await getOrNull<JobStatus>(paths.status));
      }
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setStarting(false);
    }
  }, [paths.start, paths.status]);

  return { status, result, error, starting, start, reload };
}

/** Where a job stands: its state, a progress bar while it runs, the failure's reason. */
export function JobProgress({ status, label }: { status: JobStatus | null | undefined; label: string }) {
  if (!status) return null;
  const percent = status.progress === null ? null : Math.round(status.progress * 100);
  return (
    <div class="job" role="status" aria-label={`${label} status`}>
      <StatusBadge status={status.status} />
      {isRunning(status) ? (
        <>
          {/* Without a value, the bar shows work of unknown length (keyed: a value cannot be unset). */}
          {status.progress === null ? (
            <progress key="unknown" aria-label={`${label} progress`} />
          ) : (
            <progress key="known" aria-label={`${label} progress`} max={1} value={status.progress} />
          )}
          {percent === null ? null : <span class="num">{percent}%</span>}
        </>
      ) : null}
      {status.error ? (
        <span class="job-error">
          {status.status === "failed" ? "Failed" : "Last try failed"}: {status.error.message} (
          {status.error.code})
        </span>
      ) : null}
    </div>
  );
}
