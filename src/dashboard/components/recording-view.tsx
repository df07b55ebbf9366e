import { useRef, useState } from "preact/hooks";
import type { DownloadLink, RecordingInfo, Summary, Transcript } from "../../server/schemas/index.js";
import { relativeUrl } from "../api.js";
import { type ContentJob, isRunning, JobProgress, useContentJob } from "./recording-jobs.js";
import { ShareLink } from "./share-link.js";
import { SummaryView } from "./summary-view.js";
import { TranscriptList } from "./transcript-list.js";
import { ErrorNote, formatBytes, formatClock, formatTime, Panel, useAction } from "./ui.js";

/**
 * Where the player fetches the file: the signed link's path and query, relative to this page. The
 * link is absolute on the server's public base URL, which need not be the address this page was
 * opened at, and the page's policy takes media from its own origin only.
 */
function mediaSource(link: DownloadLink): string {
  const url = new URL(link.url);
  return relativeUrl(url.pathname.slice(url.pathname.lastIndexOf("/v1/recordings/")) + url.search);
}

/** The recording's player with its transcript beside it, then its summary and share link. */
export function RecordingView({
  botId,
  info,
  link,
  renewLink,
}: {
  botId: number;
  info: RecordingInfo;
  link: DownloadLink;
  renewLink(): Promise<void>;
}) {
  const video = useRef<HTMLVideoElement>(null);
  const [currentMs, setCurrentMs] = useState(0);
  const [playerError, setPlayerError] = useState<string>();
  const renewal = useAction();
  const summary = useContentJob<Summary>("summary", botId, info.summaryStatus !== null);
  // A transcript finishing may start the summary that waited for it (or one the bot asked for).
  const transcript = useContentJob<Transcript>(
    "transcript",
    botId,
    info.transcriptStatus !== null,
    () => void summary.reload(),
  );
  const src = mediaSource(link);

  const seek = (ms: number) => {
    const player = video.current;
    if (!player) return;
    player.currentTime = ms / 1000;
    setCurrentMs(ms);
    // A play() cut short by the next seek rejects; the player shows its own state either way.
    player.play().catch(() => undefined);
  };
  const followPlayer = () => setCurrentMs((video.current?.currentTime ?? 0) * 1000);

  return (
    <>
      <Panel
        title="Recording"
        actions={
          <a href={src} download={`recording-${botId}.${info.format}`}>
            Download {info.format.toUpperCase()}
          </a>
        }
      >
        <p class="muted recording-facts">
          {formatBytes(info.sizeBytes)} · {formatClock(info.durationSeconds * 1000)} · recorded{" "}
          {formatTime(info.createdAt)}
        </p>
        <div class="columns">
          <div>
            <video
              ref={video}
              src={src}
              controls
              preload="metadata"
              aria-label="Recording"
              onTimeUpdate={followPlayer}
              onSeeked={followPlayer}
              onLoadedData={() => setPlayerError(undefined)}
              onError={() =>
                setPlayerError(
                  `The player could not load the recording${video.current?.error?.message ? ` (${video.current.error.message})` : ""}. Its link lasts an hour: reload the player for a new one.`,
                )
              }
            />
            {playerError ? (
              <div class="error" role="alert">
                {playerError}{" "}
                <button
                  type="button"
                  class="secondary"
                  disabled={renewal.busy}
                  onClick={() => void renewal.run(renewLink)}
                >
                  {renewal.busy ? "Reloading…" : "Reload the player"}
                </button>
              </div>
            ) : null}
            <ErrorNote error={renewal.error} />
          </div>
          <div class="transcript-column">
            <JobHeader
              name="Transcript"
              heading
              job={transcript}
              idle="Transcribe"
              again="Transcribe again"
              running="Transcribing…"
              replace="Replace the transcript with a new one?"
            />
            {transcript.result ? (
              <TranscriptList utterances={transcript.result.utterances} currentMs={currentMs} onSeek={seek} />
            ) : transcript.status === null ? (
              <p class="empty">No transcript yet: Transcribe makes one from the recording's audio.</p>
            ) : null}
          </div>
        </div>
      </Panel>
      <Panel title="Summary">
        <JobHeader
          name="Summary"
          job={summary}
          idle="Summarize"
          again="Summarize again"
          running="Summarizing…"
          replace="Replace the summary with a new one?"
          // Summarizing without a transcript queues one: show that one's progress too.
          onStarted={() => void transcript.reload()}
        />
        {summary.result ? (
          <SummaryView summary={summary.result} onSeek={seek} />
        ) : summary.status === null ? (
          <p class="empty">No summary yet: Summarize makes one from the transcript.</p>
        ) : null}
      </Panel>
      <ShareLink botId={botId} />
    </>
  );
}

/** A job's button (asking before it replaces a result), its progress and its errors. */
function JobHeader({
  name,
  heading = false,
  job,
  idle,
  again,
  running,
  replace,
  onStarted,
}: {
  /** What the job makes, naming its progress for assistive technology. */
  name: string;
  /** Whether to show the name as a heading (the summary's panel has its own). */
  heading?: boolean;
  job: ContentJob<unknown>;
  idle: string;
  again: string;
  running: string;
  replace: string;
  onStarted?: () => void;
}) {
  const busy = job.starting || isRunning(job.status);
  const start = async () => {
    if (job.result !== undefined && !window.confirm(replace)) return;
    await job.start();
    onStarted?.();
  };
  const loading = job.status === undefined && !job.error;
  return (
    <div class="job-header">
      {heading ? <h3>{name}</h3> : null}
      <button type="button" disabled={busy || loading} onClick={() => void start()}>
        {busy ? running : job.result === undefined ? idle : again}
      </button>
      <JobProgress status={job.status} label={name} />
      <ErrorNote error={job.error} />
    </div>
  );
}
