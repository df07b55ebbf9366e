import { useCallback, useEffect, useState } from "preact/hooks";
import type { BotDetail } from "../../server/schemas/bots.js";
import type { BotEvent, EventList } from "../../server/schemas/events.js";
import { BotActions } from "../components/bot-actions.js";
import { BotLogs, Participants, StatusTimeline } from "../components/bot-activity.js";
import { BotArtifacts } from "../components/bot-artifacts.js";
import { LiveMeeting } from "../components/live-meeting.js";
import { LiveView, WITH_A_PAGE } from "../components/live-view.js";
import { useBotLive } from "../bot-live.js";
import { MeetingPlace, PLATFORM_LABELS, RUNNING } from "../components/bot-meeting.js";
import { RecordingSection } from "../components/recording-section.js";
import { ErrorNote, formatTime, Panel, StatusBadge, useApi } from "../components/ui.js";
import { useLiveEvent } from "../live.js";
import { navigate } from "../router.js";

/**
 * Participants and log lines are not in the live stream: while the bot runs they are fetched
 * again this often. Statuses are: each live event of the bot fetches everything again.
 */
const RUNNING_REFRESH_MS = 5000;

/** One bot: what it is, how it went (statuses, participants, logs, why it failed), its recording. */
export function BotPage({ botId }: { botId: number }) {
  const bot = useApi<BotDetail>(`/v1/bots/${botId}`);
  const timeline = useApi<EventList>(`/v1/events?bot_id=${botId}&page_size=100`);
  const events = useApi<BotEvent[]>(`/v1/bots/${botId}/events`);
  const [version, setVersion] = useState(0);

  const { reload: reloadBot } = bot;
  const { reload: reloadTimeline } = timeline;
  const { reload: reloadEvents } = events;
  const refreshUnstreamed = useCallback(() => {
    void reloadEvents();
    setVersion((v) => v + 1);
  }, [reloadEvents]);
  const refresh = useCallback(() => {
    void reloadBot();
    void reloadTimeline();
    refreshUnstreamed();
  }, [reloadBot, reloadTimeline, refreshUnstreamed]);

  useLiveEvent((event) => {
    if (event.botId === botId) refresh();
  });
  const running = bot.data !== undefined && RUNNING.includes(bot.data.status);
  // Its meeting as it happens, from the start: while it runs, and after, to read it back.
  const live = useBotLive(botId, bot.data !== undefined && bot.data.status !== "READY_TO_DEPLOY");
  useEffect(() => {
    if (!running) return;
    const timer = window.setInterval(refreshUnstreamed, RUNNING_REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [running, refreshUnstreamed]);

  const name = bot.data?.botDisplayName;
  useEffect(() => {
    if (!name) return;
    const before = document.title;
    document.title = `${name} · Bot #${botId} · meetbot`;
    return () => {
      document.title = before;
    };
  }, [name, botId]);

  if (!bot.data) {
    return (
      <>
        <h1>Bot #{botId}</h1>
        <ErrorNote error={bot.error} />
        {bot.loading ? <p class="empty">Loading…</p> : null}
        <p>
          <a href="#/bots">Back to the bots</a>
        </p>
      </>
    );
  }
  const data = bot.data;
  return (
    <>
      <h1 class="bot-title">
        <bdi>{data.botDisplayName}</bdi> <span class="muted">#{data.id}</span>{" "}
        <StatusBadge status={data.status} />
        {running && live.recordingPaused ? <span class="status status-paused">recording paused</span> : null}
      </h1>
      <ErrorNote error={bot.error} />
      <Panel
        title="Meeting"
        actions={
          <BotActions
            bot={data}
            onChanged={({ deleted }) => (deleted ? navigate({ page: "bots" }) : refresh())}
          />
        }
      >
        <dl class="facts">
          <dt>Title</dt>
          <dd>{data.meetingTitle || <span class="muted">—</span>}</dd>
          <dt>Platform</dt>
          <dd>{PLATFORM_LABELS[data.meetingInfo.platform]}</dd>
          <dt>Meeting</dt>
          <dd>
            <MeetingPlace info={data.meetingInfo} />
          </dd>
          <dt>Joined as</dt>
          <dd>{joinedAs(data, events.data)}</dd>
          <dt>Created</dt>
          <dd>{formatTime(data.createdAt)}</dd>
          {data.joinAt ? (
            <>
              <dt>Joins at</dt>
              <dd>{formatTime(data.joinAt)}</dd>
            </>
          ) : null}
          <dt>Last heartbeat</dt>
          <dd>{formatTime(data.lastHeartbeat)}</dd>
          <dt>After the call</dt>
          <dd>{afterTheCall(data)}</dd>
        </dl>
      </Panel>
      {data.deploymentError ? (
        <Panel title="Why it failed">
          <p class="failure">
            <code>{data.deploymentError.code}</code> {data.deploymentError.message}
          </p>
          {data.deploymentError.artifacts?.length ? (
            <BotArtifacts paths={data.deploymentError.artifacts} />
          ) : (
            <p class="muted">The bot left no screenshot or page to look at.</p>
          )}
        </Panel>
      ) : null}
      {WITH_A_PAGE.includes(data.status) ? (
        <Panel title="What the bot sees">
          <LiveView botId={botId} />
        </Panel>
      ) : null}
      <div class="columns">
        <Panel title="Status timeline">
          <StatusTimeline events={timeline} />
        </Panel>
        <Panel title="Participants">
          <Participants events={events} finished={!running} />
        </Panel>
      </div>
      {data.liveTranscript || running || live.chat.length > 0 ? (
        <Panel title="Live meeting">
          <LiveMeeting botId={botId} live={live} inCall={data.status === "IN_CALL"} />
        </Panel>
      ) : null}
      <Panel title="Logs">
        <BotLogs botId={botId} version={version} />
      </Panel>
      <RecordingSection botId={botId} botStatus={data.status} hasRecording={data.recording !== null} />
    </>
  );
}

/**
 * Whom the meeting saw: the account's name a signed-in bot joined under (BOT_JOINED's `joinedAs`),
 * the display name for a guest, or, before it joined, the login it will sign in with.
 */
function joinedAs(bot: BotDetail, events: BotEvent[] | undefined): string {
  const joined = events?.find((event) => event.eventType === "BOT_JOINED");
  const name = joined?.data?.joinedAs;
  const account = bot.login?.assignedAccountId ?? bot.login?.accountId ?? null;
  if (typeof name === "string" && name) {
    return account !== null ? `${name}, signed in (bot account #${account})` : `${name}, signed in`;
  }
  if (joined) return `${bot.botDisplayName}, as a guest`;
  if (!bot.login) return "Not in the call yet (joins as a guest)";
  return account !== null
    ? `Not in the call yet (signs in with bot account #${account}, ${bot.login.mode})`
    : `Not in the call yet (signs in with an account of group "${bot.login.group}", ${bot.login.mode})`;
}

function afterTheCall(bot: BotDetail): string {
  if (!bot.transcription && !bot.summary) return "Nothing asked (transcribe or summarize from the recording)";
  const engine = (options: { engine?: string | undefined }) =>
    options.engine ?? "the server's default engine";
  const parts: string[] = [];
  if (bot.transcription) {
    const language = bot.transcription.language ? `, ${bot.transcription.language}` : "";
    parts.push(`transcribe (${engine(bot.transcription)}${language})`);
  }
  if (bot.summary) parts.push(`summarize (${engine(bot.summary)})`);
  return parts.join(", then ");
}
