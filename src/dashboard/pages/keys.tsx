import { Panel } from "../components/ui.js";

export function KeysPage() {
  return <Panel title="KeysPage">Not written yet.</Panel>;
}
