import { Panel } from "../components/ui.js";

export function UsagePage() {
  return <Panel title="UsagePage">Not written yet.</Panel>;
}
