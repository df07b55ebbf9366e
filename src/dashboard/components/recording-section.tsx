import { Panel } from "./ui.js";

/**
 * A bot's recording, shown on its page once it has one: the player, the transcript beside it, the
 * summary, transcribe/summarize and share links.
 */
export function RecordingSection({ botId }: { botId: number; botStatus: string }) {
  return <Panel title="Recording">Recording of bot {botId}: not written yet.</Panel>;
}
