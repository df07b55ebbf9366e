import { RecordingSection } from "../components/recording-section.js";
import { Panel } from "../components/ui.js";

export function BotPage({ botId }: { botId: number }) {
  return (
    <>
      <Panel title={`Bot ${botId}`}>Not written yet.</Panel>
      <RecordingSection botId={botId} botStatus="DONE" />
    </>
  );
}
