import { Panel } from "../components/ui.js";

export function BotsPage() {
  return <Panel title="BotsPage">Not written yet.</Panel>;
}
