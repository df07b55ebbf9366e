/**
 * The test agent (test/helpers/agent-server.ts) in a process of its own, for bench/agent-stream.ts:
 * its arrival times are then not held up by the bench's own event loop, which also runs the mock
 * meeting host (receiving what the bot's page hears) and the control plane. Talks over IPC:
 * sends `{url}` once listening; on "answer" starts answering; on "report" sends its connections
 * and replies; on "close" closes and exits.
 */
import { startAgentServer } from "../test/helpers/agent-server.js";

const agent = await startAgentServer({ replyMs: 300 });
agent.state.answering = false;
const send = (message: unknown) => process.send?.(message);
send({ url: agent.url });
process.on("message", (message) => {
  if (message === "answer") agent.state.answering = true;
  if (message === "report") send({ connections: agent.state.connections, replies: agent.state.replies });
  if (message === "close") void agent.close().then(() => process.exit(0));
});
