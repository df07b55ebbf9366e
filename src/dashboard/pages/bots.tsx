import { useState } from "preact/hooks";
import type { Bot, BotList } from "../../server/schemas/bots.js";
import { BotActions } from "../components/bot-actions.js";
import { CreateBotForm } from "../components/bot-create-form.js";
import { isStatusEvent, laterStatus, PLATFORM_LABELS } from "../components/bot-meeting.js";
import { ErrorNote, formatTime, Panel, StatusBadge, useApi } from "../components/ui.js";
import { useLiveEvent } from "../live.js";
import { hrefOf } from "../router.js";

const PAGE_SIZE = 20;

/** The user's bots, newest first, their statuses following the live events; and the create form. */
export function BotsPage() {
  const [page, setPage] = useState(1);
  const list = useApi<BotList>(`/v1/bots?page=${page}&page_size=${PAGE_SIZE}`);
  // Statuses seen live since the list was loaded; a reload may bring older ones (see laterStatus).
  const [liveStatus, setLiveStatus] = useState<Record<number, Bot["status"]>>({});
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<{ bot: Bot; deployed: boolean }>();

  const bots = list.data?.bots ?? [];
  const reload = () => void list.reload();

  useLiveEvent((event) => {
    if (!isStatusEvent(event.eventType)) return;
    if (bots.some((bot) => bot.id === event.botId)) {
      setLiveStatus((current) => ({ ...current, [event.botId]: event.eventType as Bot["status"] }));
    } else if (page === 1 && (bots.length === 0 || event.botId > (bots[0]?.id ?? 0))) {
      // Newer than any listed (ids grow): a bot made elsewhere, e.g. through the API.
      reload();
    }
  });

  const pages = Math.max(1, Math.ceil((list.data?.total ?? 0) / PAGE_SIZE));
  return (
    <>
      <h1>Bots</h1>
      {creating ? (
        <Panel title="New bot">
          <CreateBotForm
            onCancel={() => setCreating(false)}
            onCreated={(bot, outcome) => {
              if (outcome !== "failed to deploy") {
                setNotice({ bot, deployed: outcome === "deployed" });
                setCreating(false);
              }
              if (page === 1) reload();
              else setPage(1);
            }}
          />
        </Panel>
      ) : null}
      <Panel
        title="Your bots"
        actions={
          creating ? null : (
            <button type="button" onClick={() => setCreating(true)}>
              New bot
            </button>
          )
        }
      >
        {notice ? (
          <p class="notice" role="status">
            <a href={hrefOf({ page: "bot", botId: notice.bot.id })}>
              <bdi>{notice.bot.botDisplayName}</bdi>
            </a>{" "}
            {notice.deployed
              ? "was created and sent into its meeting."
              : "was created; deploy it when ready."}
          </p>
        ) : null}
        <ErrorNote error={list.error} />
        {list.loading && !list.data ? <p class="empty">Loading…</p> : null}
        {list.data && bots.length === 0 ? (
          <p class="empty">No bots yet. Press “New bot” to send one into a meeting.</p>
        ) : null}
        {bots.length > 0 ? (
          <table class="bots-table">
            <thead>
              <tr>
                <th scope="col">Bot</th>
                <th scope="col">Meeting</th>
                <th scope="col">Platform</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {bots.map((bot) => {
                const status = laterStatus(bot.status, liveStatus[bot.id]);
                return (
                  <tr key={bot.id}>
                    <td>
                      <a href={hrefOf({ page: "bot", botId: bot.id })}>
                        <bdi>{bot.botDisplayName}</bdi>
                      </a>
                      <span class="muted"> #{bot.id}</span>
                    </td>
                    <td>{bot.meetingTitle || <span class="muted">—</span>}</td>
                    <td>{PLATFORM_LABELS[bot.meetingInfo.platform]}</td>
                    <td>
                      <StatusBadge status={status} />
                    </td>
                    <td class="nowrap">{formatTime(bot.createdAt)}</td>
                    <td>
                      <BotActions bot={{ ...bot, status }} onChanged={reload} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        ) : null}
        {pages > 1 ? (
          <nav class="pager" aria-label="Pages of bots">
            <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Newer
            </button>
            <span>
              Page {page} of {pages}
            </span>
            <button
              type="button"
              class="secondary"
              disabled={page >= pages}
              onClick={() => setPage(page + 1)}
            >
              Older
            </button>
          </nav>
        ) : null}
      </Panel>
    </>
  );
}
