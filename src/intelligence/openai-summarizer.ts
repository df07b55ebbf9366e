import { z } from "zod";
import { callProvider } from "./provider-http.js";
import {
  EngineError,
  type SummarizeRequest,
  type Summarizer,
  type Summary,
  type Utterance,
} from "./types.js";

export const openAiSummarizerSettings = z.object({
  /** Any OpenAI-compatible chat completions server: OpenAI, Ollama, vLLM, LiteLLM. */
  baseUrl: z.url().default("https://api.openai.com/v1"),
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).default("gpt-4o-mini"),
  timeoutMs: z.number().int().positive().default(180_000),
  /** Tries for an answer that validates, before `invalid_answer`. */
  maxAttempts: z.number().int().min(1).max(10).default(3),
});
export type OpenAiSummarizerSettings = z.input<typeof openAiSummarizerSettings>;

/** What the model must answer; `at` is the `[mm:ss]` of the line the action item comes from. */
const modelAnswer = z.object({
  overview: z.string(),
  keyPoints: z.array(z.string()),
  actionItems: z.array(
    z.object({
      text: z.string(),
      owner: z.string().nullable(),
      due: z.string().nullable(),
      at: z.string().nullable(),
    }),
  ),
  decisions: z.array(z.string()),
});

const ANSWER_SCHEMA = z.toJSONSchema(modelAnswer);

const INSTRUCTIONS = [
  "You summarize a meeting transcript. Lines are `[mm:ss] Speaker: text`.",
  "Answer JSON only: {overview: string (2-4 sentences), keyPoints: string[], actionItems:",
  "[{text, owner (person named, else the speaker; or null), due (the due phrase as said, or null),",
  "at (the [mm:ss] of the line, without brackets, or null)}], decisions: string[]}.",
  "Use only what the transcript says.",
].join(" ");

/**
 * Chat completions with a JSON schema answer. Servers that refuse `json_schema` (a 400 or 422 from
 * older vLLM, Ollama and LiteLLM builds) are asked again with `{type: "json_object"}`, and this
 * engine keeps using it; a request refused for another reason is refused again and fails then. An answer that does not validate is asked for again, up to `maxAttempts`, then `invalid_answer`.
 */
export class OpenAiSummarizer implements Summarizer {
  readonly engine = "openai" as const;
  private readonly settings: z.output<typeof openAiSummarizerSettings>;
  private jsonSchemaRefused = false;

  constructor(settings: OpenAiSummarizerSettings) {
    this.settings = openAiSummarizerSettings.parse(settings);
  }

  async summarize(request: SummarizeRequest): Promise<Summary> {
    const transcript = transcriptLines(request.utterances);
    const title = request.meetingTitle ? `Meeting: ${request.meetingTitle}\n` : "";
    const messages = [
      { role: "system", content: INSTRUCTIONS },
      { role: "user", content: `${title}${transcript}` },
    ];
    let problem = "";
    for (let attempt = 1; attempt <= this.settings.maxAttempts; attempt++) {
      const content = await this.complete(messages, request.signal);
      const answer = parseAnswer(content);
      if (answer.success) return toSummary(answer.data);
      problem = answer.problem;
    }
    throw new EngineError(
      "invalid_answer",
      `openai gave no valid summary in ${this.settings.maxAttempts} tries: ${problem}`,
      false,
    );
  }

  private async complete(messages: object[], signal?: AbortSignal): Promise<string> {
    if (!this.jsonSchemaRefused) {
      try {
        return await this.chat(
          messages,
          {
            type: "json_schema",
            json_schema: { name: "meeting_summary", strict: true, schema: ANSWER_SCHEMA },
          },
          signal,
        );
      } catch (error) {
        if (!(error instanceof EngineError && error.code === "request_rejected")) throw error;
        this.jsonSchemaRefused = true;
      }
    }
    return this.chat(messages, { type: "json_object" }, signal);
  }

  private async chat(messages: object[], responseFormat: object, signal?: AbortSignal): Promise<string> {
    const { json } = await callProvider("openai", {
      method: "POST",
      url: `${this.settings.baseUrl.replace(/\/+$/, "")}/chat/completions`,
      headers: {
        "content-type": "application/json",
        ...(this.settings.apiKey ? { authorization: `Bearer ${this.settings.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: this.settings.model, messages, response_format: responseFormat }),
      timeoutMs: this.settings.timeoutMs,
      signal,
    });
    const content = (json as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message
      ?.content;
    return typeof content === "string" ? content : "";
  }
}

/** The transcript as the model reads it: one `[mm:ss] Name: text` line per utterance. */
export function transcriptLines(utterances: Utterance[]): string {
  return utterances.map((u) => `[${clock(u.startMs)}] ${u.speaker?.name ?? "Unknown"}: ${u.text}`).join("\n");
}

function clock(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return `${String(Math.floor(seconds / 60)).padStart(2, "0")}:${String(seconds % 60).padStart(2, "0")}`;
}

function parseAnswer(
  content: string,
): { success: true; data: z.infer<typeof modelAnswer> } | { success: false; problem: string } {
  let json: unknown;
  try {
    // Some local models wrap their JSON in a Markdown fence even in JSON mode.
    json = JSON.parse(content.replace(/^\s*```(?:json)?\s*|\s*```\s*$/g, ""));
  } catch {
    return { success: false, problem: `not JSON: ${content.slice(0, 120)}` };
  }
  const parsed = modelAnswer.safeParse(json);
  return parsed.success
    ? { success: true, data: parsed.data }
    : { success: false, problem: parsed.error.message.slice(0, 300) };
}

function toSummary(answer: z.infer<typeof modelAnswer>): Summary {
  return {
    overview: answer.overview,
    keyPoints: answer.keyPoints,
    decisions: answer.decisions,
    actionItems: answer.actionItems.map((item) => ({
      text: item.text,
      owner: item.owner,
      due: item.due,
      startMs: item.at === null ? null : clockToMs(item.at),
    })),
  };
}

/** "mm:ss" or "h:mm:ss" (brackets tolerated) to milliseconds; null when the model wrote something else. */
export function clockToMs(value: string): number | null {
  const match = /^\[?(?:(\d+):)?(\d+):(\d{2})\]?$/.exec(value.trim());
  if (!match) return null;
  const [, hours = "0", minutes = "0", seconds = "0"] = match;
  return ((Number(hours) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000;
}
