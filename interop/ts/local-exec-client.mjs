// local-exec-client: the official SDK's client, without terminals, running
// one prompt with an agent that runs commands itself (acpterm agent
// --exec local or auto) and shows them as display terminals.
//
//   CLIENT_META='{"terminal_output":true}' node local-exec-client.mjs WORKSPACE -- AGENT [ARGS...]
//
// CLIENT_META, if set, is the clientCapabilities._meta it advertises. The
// output is that of sdk-client.mjs: wire, update and step lines.

import * as acp from "@agentclientprotocol/sdk";
import { clientScript } from "./wire.mjs";

const { workspace, print, stream, step, finish } = clientScript("local-exec-client.mjs");
const meta = process.env.CLIENT_META ? JSON.parse(process.env.CLIENT_META) : undefined;

const app = acp
  .client({ name: "acpterm-interop-local-exec-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    print({ kind: "update", update: params.update });
  });

await app.connectWith(stream, async (agent) => {
  const A = acp.methods.agent;
  await step("initialize", () =>
    agent.request(A.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { terminal: false, ...(meta ? { _meta: meta } : {}) },
      clientInfo: { name: "acpterm-interop-local-exec-client", version: "1.0.0" },
    }),
  );
  let sessionId;
  await step("session_new", async () => {
    const r = await agent.request(A.session.new, { cwd: workspace, mcpServers: [] });
    sessionId = r.sessionId;
    return r;
  });
  await step("prompt", () =>
    agent.request(A.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "printf 'hello from local\\n'; printf 'line two\\n'" }],
    }),
  );
});

await finish();
