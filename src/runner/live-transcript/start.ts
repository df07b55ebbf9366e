import type { LiveTranscriptSource } from "../../core/index.js";
import type { LiveTranscriber, LiveTranscriptContext } from "./types.js";

/**
 * How a stage starts each source it has: `state` is what the source reports as `transcript.source`
 * once it runs (`fallback` when it stands in for captions).
 */
export type LiveTranscriptSources = Partial<
  Record<
    LiveTranscriptSource,
    (context: LiveTranscriptContext, state: "active" | "fallback") => LiveTranscriber
  >
>;

/**
 * Starts the source BotConfig.liveTranscript asks for. A source this runner cannot offer is
 * reported `unavailable`; captions that are unavailable fall back to pocketsphinx when the options
 * say so (a captions source reports its own unavailability, then falls back the same way).
 */
export function startLiveTranscript(
  context: LiveTranscriptContext,
  sources: LiveTranscriptSources,
): LiveTranscriber {
  const { source, fallback } = context.options;
  const start = sources[source];
  if (start) return start(context, "active");
  const reason = `this runner cannot make a live transcript from ${source}`;
  context.log.warn({ source }, reason);
  context.report({ type: "transcript.source", data: { source, state: "unavailable", reason } });
  const standIn = source === "captions" && fallback ? sources.pocketsphinx : undefined;
  return standIn ? standIn(context, "fallback") : { stop: () => Promise.resolve() };
}
