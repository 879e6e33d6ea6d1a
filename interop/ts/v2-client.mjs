// v2-client: the official SDK's ACP v2 client (experimental/v2) driving a Go
// agent over v2: the same Go agent as sdk-client.mjs drives over v1
// (go_agent_test.go), which the Go SDK serves in either version.
//
//   node v2-client.mjs WORKSPACE -- AGENT [ARGS...]
//
// It prints what sdk-client.mjs prints (wire lines, steps, the wire check
// against the SDK's v2 schemas); each prompt step also reports the kinds of
// the updates up to the idle state that ended it.

import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { clientScript } from "./wire.mjs";

const { workspace, print, stream, step, finish } = clientScript("v2-client.mjs", 2);

const app = acp.client({ name: "acpterm-interop-v2-client" }).onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
  print({ kind: "request", method: "session/request_permission", params });
  const allow = params.options.find((o) => o.kind === "allow_once");
  return { outcome: { outcome: "selected", optionId: allow.optionId } };
});

// untilStop reads a session's updates up to the next idle state and
// returns their kinds, the stop, and the text the agent said.
async function untilStop(session, onUpdate) {
  const kinds = [];
  let text = "";
  for (;;) {
    const m = await session.nextUpdate();
    if (m.kind === "stop") {
      return { kinds, stopReason: m.stopReason ?? null, background: m.update.background ?? null, text };
    }
    const u = m.update;
    kinds.push(u.sessionUpdate === "state_update" ? `state_update:${u.state}` : u.sessionUpdate);
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") text += u.content.text;
    await onUpdate?.(u);
  }
}

await app.connectWith(stream, async (agent) => {
  const A = acp.methods.agent;
  await step("initialize", () =>
    agent.request(A.initialize, {
      protocolVersion: 2,
      info: { name: "acpterm-interop-v2-client", version: "1.0.0" },
      capabilities: {},
    }),
  );
  const session = await agent.buildSession(workspace).start();
  print({ kind: "step", step: "session_new", ok: { sessionId: session.sessionId } });

  // A turn: acknowledged with a message id, ended by an idle state update.
  await step("prompt_hello", async () => {
    const ack = await session.prompt("hello");
    return { ack, ...(await untilStop(session)) };
  });

  // A terminal that outlives its turn: listed as background work,
  // cancellable, and cancelled; the exit and a new list follow.
  await step("prompt_background", async () => {
    await session.prompt("background");
    const turn = await untilStop(session);
    const term = turn.background?.[0]?.terminalId;
    const cancellable = term !== undefined && session.canCancelTerminal(term);
    const cancel = cancellable ? await session.cancelTerminal(term) : null;
    const after = cancellable ? await untilStop(session) : null;
    return { turn, term, cancellable, cancel, after, canCancelAfter: term !== undefined && session.canCancelTerminal(term) };
  });

  // session/cancel while the agent waits: the idle state says "cancelled".
  await step("prompt_session_cancel", async () => {
    await session.prompt("wait-for-cancel");
    return untilStop(session, async (u) => {
      if (u.sessionUpdate === "agent_message_chunk" && u.content.text === "waiting") {
        await agent.notify(A.session.cancel, { sessionId: session.sessionId });
      }
    });
  });

  // The baseline methods the Go agent does not implement itself.
  await step("session_list", () => agent.request(A.session.list, {}));
  await step("session_close", () => agent.request(A.session.close, { sessionId: session.sessionId }));
  session.dispose();
});

await finish();
