import { useState } from "preact/hooks";
import { WEBHOOK_EVENT_NAMES } from "../../core/webhook-event-names.js";
import type { WebhookWithSecret } from "../../server/schemas/webhooks.js";
import { api } from "../api.js";
import { ErrorNote, Panel, useAction } from "./ui.js";

/** The API's name for "every event, present and future". */
const ALL_EVENTS = "*";

/** Subscribe a URL to some events of all the user's bots. */
export function CreateWebhookForm({ onCreated }: { onCreated(webhook: WebhookWithSecret): void }) {
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [all, setAll] = useState(true);
  const [events, setEvents] = useState<string[]>([]);
  const action = useAction();

  const toggle = (event: string, on: boolean) =>
    setEvents((current) => (on ? [...current, event] : current.filter((e) => e !== event)));

  const submit = async (e: Event) => {
    e.preventDefault();
    const webhook = await action.run(() =>
      api<WebhookWithSecret>("POST", "/v1/webhooks", {
        body: { name, url, events: all ? [ALL_EVENTS] : events },
      }),
    );
    if (webhook) {
      setName("");
      setUrl("");
      setAll(true);
      setEvents([]);
      onCreated(webhook);
    }
  };

  return (
    <Panel title="Add a webhook">
      <form class="webhook-form" onSubmit={submit}>
        <div class="grid2">
          <label>
            Name
            <input
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              required
              maxLength={200}
              placeholder="e.g. CRM"
            />
          </label>
          <label>
            URL
            <input
              type="url"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
              required
              maxLength={2048}
              placeholder="https://example.com/meetbot-events"
            />
          </label>
        </div>
        <fieldset>
          <legend>Events</legend>
          <label class="check">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} />
            All events, including ones added later
          </label>
          <div class="event-choices">
            {WEBHOOK_EVENT_NAMES.map((event) => (
              <label class="check" key={event}>
                <input
                  type="checkbox"
                  checked={all || events.includes(event)}
                  disabled={all}
                  onChange={(e) => toggle(event, e.currentTarget.checked)}
                />
                <code>{event}</code>
              </label>
            ))}
          </div>
        </fieldset>
        <div>
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Adding…" : "Add webhook"}
          </button>
        </div>
      </form>
      <ErrorNote error={action.error} />
    </Panel>
  );
}
