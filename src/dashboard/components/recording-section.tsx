import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { DownloadLink, RecordingInfo } from "../../server/schemas/index.js";
import { api } from "../api.js";
import { getOrNull } from "./recording-jobs.js";
import { RecordingView } from "./recording-view.js";
import { ErrorNote, Panel } from "./ui.js";

/** Statuses after which no recording will come. */
const FINISHED = new Set(["DONE", "FATAL"]);

interface Recording {
  info: RecordingInfo;
  link: DownloadLink;
}

/**
 * A bot's recording, shown on its page once it has one: the player, the transcript beside it, the
 * summary, transcribe/summarize and share links. Until the bot says it has a recording (its page
 * fetches the bot again on each of its live events), it says so and asks the API nothing.
 */
export function RecordingSection({
  botId,
  botStatus,
  hasRecording,
}: {
  botId: number;
  botStatus: string;
  hasRecording: boolean;
}) {
  // undefined: loading; null: the bot has no recording (yet).
  const [recording, setRecording] = useState<Recording | null>();
  const [error, setError] = useState<string>();
  const found = useRef(false);
  const loading = useRef<Promise<void> | null>(null);

  const lookForRecording = useCallback(() => {
    // Once found, the player keeps its source: looking again would restart it.
    if (found.current) return Promise.resolve();
    loading.current ??= (async () => {
      try {
        const info = await getOrNull<RecordingInfo>(`/v1/recordings/${botId}`);
        const link = info && (await api<DownloadLink>("GET", `/v1/recordings/${botId}/download`));
        found.current = link !== null;
        setRecording(info && link ? { info, link } : null);
        setError(undefined);
      } catch (failure) {
        setError((failure as Error).message);
      }
    })().finally(() => {
      loading.current = null;
    });
    return loading.current;
  }, [botId]);

  useEffect(() => {
    if (hasRecording) void lookForRecording();
    else setRecording(null);
  }, [lookForRecording, hasRecording]);

  /** A signed link lasts an hour: the player asks for a fresh one when its own fails. */
  const renewLink = useCallback(async () => {
    const link = await api<DownloadLink>("GET", `/v1/recordings/${botId}/download`);
    setRecording((current) => current && { ...current, link });
  }, [botId]);

  if (!recording) {
    return (
      <Panel title="Recording">
        <ErrorNote error={error} />
        {recording === null ? (
          <p class="empty">
            {FINISHED.has(botStatus)
              ? "This bot has no recording."
              : "No recording yet: it appears here once the bot has left the meeting and uploaded it."}
          </p>
        ) : error ? null : (
          <p class="muted">Loading…</p>
        )}
      </Panel>
    );
  }
  return <RecordingView botId={botId} info={recording.info} link={recording.link} renewLink={renewLink} />;
}
