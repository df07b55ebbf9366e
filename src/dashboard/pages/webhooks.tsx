import { Panel } from "../components/ui.js";

export function WebhooksPage() {
  return <Panel title="WebhooksPage">Not written yet.</Panel>;
}
