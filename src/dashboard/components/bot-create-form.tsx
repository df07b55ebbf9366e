import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { MeetingInfo } from "../../core/platform.js";
import type { BotAccountList } from "../../server/schemas/bot-accounts.js";
import type { Bot, CreateBotBody } from "../../server/schemas/bots.js";
import { api, ApiFailure } from "../api.js";
import { PLATFORM_LABELS } from "./bot-meeting.js";
import { ErrorNote, useApi } from "./ui.js";

type Platform = MeetingInfo["platform"];
type LeaveField = keyof CreateBotBody["automaticLeave"];

/** The API takes milliseconds; people think of these in minutes. Defaults as core's AutomaticLeave. */
const LEAVE_FIELDS: { key: LeaveField; label: string; hint: string; defaultMinutes: number }[] = [
  {
    key: "waitingRoomTimeout",
    label: "Waiting room timeout",
    hint: "Give up when not admitted within this time.",
    defaultMinutes: 5,
  },
  {
    key: "noOneJoinedTimeout",
    label: "No one joined",
    hint: "Leave when nobody else joins within this time.",
    defaultMinutes: 5,
  },
  {
    key: "everyoneLeftTimeout",
    label: "Everyone left",
    hint: "Leave this long after the last participant left.",
    defaultMinutes: 5,
  },
  {
    key: "maxDuration",
    label: "Maximum duration",
    hint: "Leave after this long in the call, whatever happens.",
    defaultMinutes: 240,
  },
  {
    key: "silenceTimeout",
    label: "Silence",
    hint: "Leave after this long without a sound; 0: never.",
    defaultMinutes: 30,
  },
];

const TRANSCRIPTION_ENGINES = [
  ["pocketsphinx", "PocketSphinx (on this server)"],
  ["openai", "OpenAI"],
  ["deepgram", "Deepgram"],
  ["assemblyai", "AssemblyAI"],
] as const;
const SUMMARY_ENGINES = [
  ["extractive", "Extractive (on this server)"],
  ["openai", "OpenAI"],
] as const;

const LINK_EXAMPLES: Record<Platform, string> = {
  google: "https://meet.google.com/abc-defg-hij",
  zoom: "https://zoom.us/j/85012345678?pwd=…",
  teams: "https://teams.microsoft.com/l/meetup-join/…",
};

/** The form's fields, as typed (numbers stay strings until sent: empty means "the default"). */
type TextField =
  | "meetingUrl"
  | "meetingId"
  | "meetingPassword"
  | "tenantId"
  | "organizerId"
  | "botDisplayName"
  | "meetingTitle"
  | "language"
  | "loginGroup"
  | "joinAt";

interface Fields {
  platform: Platform;
  joinBy: "link" | "ids";
  meetingUrl: string;
  meetingId: string;
  meetingPassword: string;
  tenantId: string;
  organizerId: string;
  botDisplayName: string;
  meetingTitle: string;
  leave: Partial<Record<LeaveField, string>>;
  transcribe: boolean;
  transcriptionEngine: string;
  language: string;
  summarize: boolean;
  summaryEngine: string;
  /** "": join as a guest. */
  loginMode: "" | "always" | "only_if_required";
  /** An account's id, or "": any free account of loginGroup. */
  loginAccount: string;
  loginGroup: string;
  /** A datetime-local value (the browser's time zone); "": deployed now, or by hand. */
  joinAt: string;
}

const LOGIN_MODES = [
  ["", "As a guest (no sign-in)"],
  ["always", "Signed in to a bot account"],
  ["only_if_required", "As a guest; signed in if the meeting requires it"],
] as const;

const EMPTY: Fields = {
  platform: "google",
  joinBy: "link",
  meetingUrl: "",
  meetingId: "",
  meetingPassword: "",
  tenantId: "",
  organizerId: "",
  botDisplayName: "",
  meetingTitle: "",
  leave: {},
  transcribe: false,
  transcriptionEngine: "",
  language: "",
  summarize: false,
  summaryEngine: "",
  loginMode: "",
  loginAccount: "",
  loginGroup: "",
  joinAt: "",
};

/** POST /v1/bots's body: only what was filled in, so that the server's defaults apply to the rest. */
function bodyOf(f: Fields): Record<string, unknown> {
  const byIds = f.platform !== "google" && f.joinBy === "ids";
  const meetingInfo: Record<string, string> = { platform: f.platform };
  if (!byIds) meetingInfo.meetingUrl = f.meetingUrl.trim();
  else if (f.platform === "zoom") {
    meetingInfo.meetingId = f.meetingId.trim();
    if (f.meetingPassword) meetingInfo.meetingPassword = f.meetingPassword;
  } else {
    meetingInfo.meetingId = f.meetingId.trim();
    meetingInfo.tenantId = f.tenantId.trim();
    meetingInfo.organizerId = f.organizerId.trim();
  }
  const automaticLeave: Record<string, number> = {};
  for (const { key } of LEAVE_FIELDS) {
    const minutes = f.leave[key]?.trim();
    if (minutes) automaticLeave[key] = Math.round(Number(minutes) * 60_000);
  }
  const body: Record<string, unknown> = { meetingInfo, automaticLeave };
  if (f.botDisplayName.trim()) body.botDisplayName = f.botDisplayName.trim();
  if (f.meetingTitle.trim()) body.meetingTitle = f.meetingTitle.trim();
  if (f.transcribe) {
    body.transcription = {
      ...(f.transcriptionEngine ? { engine: f.transcriptionEngine } : {}),
      ...(f.language.trim() ? { language: f.language.trim() } : {}),
    };
  }
  if (f.summarize) body.summary = f.summaryEngine ? { engine: f.summaryEngine } : {};
  // The API takes UTC; the input shows the browser's local time.
  if (f.joinAt) body.joinAt = new Date(f.joinAt).toISOString();
  if (f.loginMode) {
    body.login = f.loginAccount
      ? { mode: f.loginMode, accountId: Number(f.loginAccount) }
      : { mode: f.loginMode, ...(f.loginGroup.trim() ? { group: f.loginGroup.trim() } : {}) };
  }
  return body;
}

export type CreateOutcome = "deployed" | "created" | "failed to deploy";

/**
 * Creates a bot, and deploys it unless "Create only" was pressed or it is scheduled (the server
 * deploys a scheduled bot by itself shortly before its time). The API's refusals are shown
 * beside the fields they name, and all together above the buttons.
 */
export function CreateBotForm({
  onCreated,
  onCancel,
}: {
  /** "failed to deploy": the bot exists but did not go (the form stays, saying why). */
  onCreated(bot: Bot, outcome: CreateOutcome): void;
  onCancel(): void;
}) {
  const [fields, setFields] = useState<Fields>(EMPTY);
  const [phase, setPhase] = useState<"idle" | "creating" | "deploying">("idle");
  const [error, setError] = useState<string>();
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const set = <K extends keyof Fields>(key: K, value: Fields[K]) =>
    setFields((current) => ({ ...current, [key]: value }));
  const busy = phase !== "idle";

  const submit = async (event: Event) => {
    event.preventDefault();
    const deploy = (event as SubmitEvent).submitter?.getAttribute("value") !== "create" && !fields.joinAt;
    setError(undefined);
    setFieldErrors({});
    let bot: Bot | undefined;
    try {
      setPhase("creating");
      bot = await api<Bot>("POST", "/v1/bots", { body: bodyOf(fields) });
      if (deploy) {
        setPhase("deploying");
        await api("POST", `/v1/bots/${bot.id}/deploy`);
      }
      setFields((current) => ({
        ...current,
        meetingUrl: "",
        meetingId: "",
        meetingPassword: "",
        meetingTitle: "",
        joinAt: "",
      }));
      onCreated(bot, deploy ? "deployed" : "created");
    } catch (failure) {
      const message = (failure as Error).message;
      // The bot exists even though it did not go: say so, and let the list show it.
      if (bot) {
        setError(`Bot #${bot.id} was created but not deployed: ${message}`);
        onCreated(bot, "failed to deploy");
      } else {
        setError(message);
        setFieldErrors(failure instanceof ApiFailure ? failure.fieldErrors() : {});
      }
    } finally {
      setPhase("idle");
    }
  };

  const field = (
    name: string,
    label: string,
    input: (described: { id: string; invalid: boolean; describedBy?: string }) => ComponentChildren,
    hint?: string,
  ) => {
    const id = `bot-${name.replace(/\./g, "-")}`;
    const problem = fieldErrors[name];
    const describedBy = [hint ? `${id}-hint` : "", problem ? `${id}-error` : ""].filter(Boolean).join(" ");
    return (
      <div class="field">
        <label for={id}>{label}</label>
        {input({ id, invalid: Boolean(problem), ...(describedBy ? { describedBy } : {}) })}
        {hint ? (
          <span class="hint" id={`${id}-hint`}>
            {hint}
          </span>
        ) : null}
        {problem ? (
          <span class="field-error" id={`${id}-error`}>
            {problem}
          </span>
        ) : null}
      </div>
    );
  };
  /** A text input for `key`, its API refusal found under `apiField` (as `loc` names it). */
  const text = (
    key: TextField,
    apiField: string,
    label: string,
    options: { hint?: string; required?: boolean; placeholder?: string; type?: string } = {},
  ) =>
    field(
      apiField,
      label,
      ({ id, invalid, describedBy }) => (
        <input
          id={id}
          type={options.type ?? "text"}
          value={fields[key]}
          onInput={(e) => set(key, e.currentTarget.value)}
          required={options.required}
          placeholder={options.placeholder}
          aria-invalid={invalid || undefined}
          aria-describedby={describedBy}
        />
      ),
      options.hint,
    );

  const byIds = fields.platform !== "google" && fields.joinBy === "ids";
  // The accounts a login may name: the user's, of the meeting's platform (asked for once wanted).
  const accounts = useApi<BotAccountList>(
    fields.loginMode ? `/v1/bot-accounts?platform=${fields.platform}&page_size=100` : null,
  );
  return (
    <form class="bot-form" onSubmit={submit} aria-label="Create a bot">
      <div class="grid2">
        {field("meetingInfo.platform", "Platform", ({ id, describedBy }) => (
          <select
            id={id}
            value={fields.platform}
            onChange={(e) =>
              // An account belongs to one platform: a new platform starts from "any account".
              setFields((current) => ({
                ...current,
                platform: e.currentTarget.value as Platform,
                loginAccount: "",
              }))
            }
            aria-describedby={describedBy}
          >
            {Object.entries(PLATFORM_LABELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        ))}
        {fields.platform === "google" ? (
          <span />
        ) : (
          <fieldset class="join-by">
            <legend>Join with</legend>
            <label class="check">
              <input
                type="radio"
                name="join-by"
                checked={fields.joinBy === "link"}
                onChange={() => set("joinBy", "link")}
              />
              Meeting link
            </label>
            <label class="check">
              <input
                type="radio"
                name="join-by"
                checked={fields.joinBy === "ids"}
                onChange={() => set("joinBy", "ids")}
              />
              {fields.platform === "zoom" ? "Meeting ID and passcode" : "Meeting ID, tenant and organizer"}
            </label>
          </fieldset>
        )}
      </div>

      {byIds ? (
        <div class="grid2">
          {text("meetingId", "meetingInfo.meetingId", "Meeting ID", { required: true })}
          {fields.platform === "zoom"
            ? text("meetingPassword", "meetingInfo.meetingPassword", "Passcode", {
                hint: "Leave empty when the meeting has none.",
              })
            : text("tenantId", "meetingInfo.tenantId", "Tenant ID", { required: true })}
          {fields.platform === "teams"
            ? text("organizerId", "meetingInfo.organizerId", "Organizer ID", { required: true })
            : null}
        </div>
      ) : (
        text("meetingUrl", "meetingInfo.meetingUrl", "Meeting link", {
          type: "url",
          required: true,
          placeholder: LINK_EXAMPLES[fields.platform],
        })
      )}

      <div class="grid2">
        {text("botDisplayName", "botDisplayName", "Display name", {
          placeholder: "Meetbot",
          hint: "The name the bot joins under; empty: Meetbot.",
        })}
        {text("meetingTitle", "meetingTitle", "Meeting title", {
          hint: "For you: shown in lists and webhooks.",
        })}
      </div>
      {text("joinAt", "joinAt", "Join at (optional)", {
        type: "datetime-local",
        hint: "Schedule the bot: the server deploys it by itself a minute before. Empty: now, or by hand.",
      })}

      <fieldset>
        <legend>Join</legend>
        <div class="grid2">
          {field("login.mode", "Join the meeting", ({ id, invalid, describedBy }) => (
            <select
              id={id}
              value={fields.loginMode}
              onChange={(e) => set("loginMode", e.currentTarget.value as Fields["loginMode"])}
              aria-invalid={invalid || undefined}
              aria-describedby={describedBy}
            >
              {LOGIN_MODES.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          ))}
          {fields.loginMode
            ? field(
                "login.accountId",
                "Bot account",
                ({ id, invalid, describedBy }) => (
                  <select
                    id={id}
                    value={fields.loginAccount}
                    onChange={(e) => set("loginAccount", e.currentTarget.value)}
                    aria-invalid={invalid || undefined}
                    aria-describedby={describedBy}
                  >
                    <option value="">Any free account of a group</option>
                    {(accounts.data?.botAccounts ?? []).map((account) => (
                      <option key={account.id} value={String(account.id)}>
                        {`${account.name} (${account.status})`}
                      </option>
                    ))}
                  </select>
                ),
                accounts.data?.botAccounts.length === 0
                  ? `No ${PLATFORM_LABELS[fields.platform]} bot accounts yet: add one under Bot accounts.`
                  : "The account is held for the bot from deploy until it ends.",
              )
            : null}
        </div>
        {fields.loginMode && !fields.loginAccount
          ? text("loginGroup", "login.group", "Account group", {
              placeholder: "default",
              hint: "The bot gets the least recently used free account of this group; none free: it fails at once.",
            })
          : null}
      </fieldset>

      <fieldset>
        <legend>Automatic leave (minutes; empty: the default shown)</legend>
        <div class="leave-grid">
          {LEAVE_FIELDS.map(({ key, label, hint, defaultMinutes }) =>
            field(
              `automaticLeave.${key}`,
              label,
              ({ id, invalid, describedBy }) => (
                <input
                  id={id}
                  type="number"
                  min="0"
                  step="any"
                  inputMode="decimal"
                  placeholder={String(defaultMinutes)}
                  value={fields.leave[key] ?? ""}
                  onInput={(e) => set("leave", { ...fields.leave, [key]: e.currentTarget.value })}
                  aria-invalid={invalid || undefined}
                  aria-describedby={describedBy}
                />
              ),
              hint,
            ),
          )}
        </div>
      </fieldset>

      <fieldset>
        <legend>After the call</legend>
        <div class="grid2">
          <div class="stack">
            <label class="check">
              <input
                type="checkbox"
                checked={fields.transcribe}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  // No summary without a transcript.
                  setFields((current) => ({
                    ...current,
                    transcribe: on,
                    summarize: on && current.summarize,
                  }));
                }}
              />
              Transcribe the recording
            </label>
            {fields.transcribe ? (
              <>
                {field("transcription.engine", "Transcription engine", ({ id, invalid, describedBy }) => (
                  <select
                    id={id}
                    value={fields.transcriptionEngine}
                    onChange={(e) => set("transcriptionEngine", e.currentTarget.value)}
                    aria-invalid={invalid || undefined}
                    aria-describedby={describedBy}
                  >
                    <option value="">The server's default</option>
                    {TRANSCRIPTION_ENGINES.map(([value, label]) => (
                      <option key={value} value={value}>
                        {label}
                      </option>
                    ))}
                  </select>
                ))}
                {text("language", "transcription.language", "Language", {
                  placeholder: "en",
                  hint: "A code such as en or en-US; empty: the engine's default.",
                })}
              </>
            ) : null}
          </div>
          <div class="stack">
            <label class="check">
              <input
                type="checkbox"
                checked={fields.summarize}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  setFields((current) => ({
                    ...current,
                    summarize: on,
                    transcribe: on || current.transcribe,
                  }));
                }}
              />
              Summarize the transcript (transcribes it too)
            </label>
            {fields.summarize
              ? field("summary.engine", "Summary engine", ({ id, invalid, describedBy }) => (
                  <select
                    id={id}
                    value={fields.summaryEngine}
                    onChange={(e) => set("summaryEngine", e.currentTarget.value)}
                    aria-invalid={invalid || undefined}
                    aria-describedby={describedBy}
                  >
                    <option value="">The server's default</option>
                    {SUMMARY_ENGINES.map(([value, label]) => (
                      <option key={value} value={value}>
                        {label}
                      </option>
                    ))}
                  </select>
                ))
              : null}
          </div>
        </div>
      </fieldset>

      <ErrorNote error={error} />
      <div class="actions">
        <button type="submit" value="deploy" disabled={busy}>
          {phase === "creating"
            ? "Creating…"
            : phase === "deploying"
              ? "Deploying…"
              : fields.joinAt
                ? "Create and schedule"
                : "Create and deploy"}
        </button>
        <button type="submit" value="create" class="secondary" disabled={busy}>
          Create only
        </button>
        <button type="button" class="link" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}
