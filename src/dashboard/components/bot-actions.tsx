import type { Bot } from "../../server/schemas/bots.js";
import { api } from "../api.js";
import { DELETABLE, RUNNING } from "./bot-meeting.js";
import { ErrorNote, useAction } from "./ui.js";

/**
 * Deploy, leave (a bot in the call leaves, keeping all it recorded), kill and delete, each offered
 * only in the statuses the API accepts it in. Kill and delete ask first. `onChanged` runs after any of them succeeded (`deleted` says which).
 */
export function BotActions({
  bot,
  onChanged,
}: {
  bot: Pick<Bot, "id" | "botDisplayName" | "status">;
  onChanged(change: { deleted: boolean }): void;
}) {
  const action = useAction();
  const name = `"${bot.botDisplayName}" (#${bot.id})`;

  const deploy = async () => {
    const done = await action.run(() => api("POST", `/v1/bots/${bot.id}/deploy`));
    if (done) onChanged({ deleted: false });
  };
  const leave = async () => {
    const done = await action.run(() => api("POST", `/v1/bots/${bot.id}/leave`));
    if (done) onChanged({ deleted: false });
  };
  const kill = async () => {
    if (!confirm(`Stop bot ${name} now? It leaves the meeting and ends as FATAL (KILLED).`)) return;
    const done = await action.run(() => api("POST", `/v1/bots/${bot.id}/kill`));
    if (done) onChanged({ deleted: false });
  };
  const remove = async () => {
    if (!confirm(`Delete bot ${name} with its recording, transcript and logs? This cannot be undone.`))
      return;
    const done = await action.run(async () => {
      await api("DELETE", `/v1/bots/${bot.id}`);
      return true;
    });
    if (done) onChanged({ deleted: true });
  };

  return (
    <div class="bot-actions">
      <div class="actions">
        {bot.status === "READY_TO_DEPLOY" ? (
          <button type="button" onClick={deploy} disabled={action.busy}>
            Deploy
          </button>
        ) : null}
        {bot.status === "IN_CALL" ? (
          <button type="button" onClick={leave} disabled={action.busy}>
            Leave the call
          </button>
        ) : null}
        {RUNNING.includes(bot.status) ? (
          <button type="button" class="danger" onClick={kill} disabled={action.busy}>
            Kill
          </button>
        ) : null}
        {DELETABLE.includes(bot.status) ? (
          <button type="button" class="danger" onClick={remove} disabled={action.busy}>
            Delete
          </button>
        ) : null}
      </div>
      <ErrorNote error={action.error} />
    </div>
  );
}
