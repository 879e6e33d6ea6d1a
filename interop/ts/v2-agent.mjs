// v2-agent: the official SDK's ACP v2 agent (experimental/v2), driven by the
// Go SDK's client over v2 (ConnOptions.OfferV2; see v2_test.go). Each prompt
// text names a scripted turn:
//
//   hello   acknowledges, then: running, an agent message in two chunks, a
//           tool call created and patched (a title cleared with null), a
//           terminal that advertises cancel and keeps running past the turn,
//           and idle with that terminal as background work
//   fail    idle with stop reason "error" and an error object
//   wire    reports what the SDK's v2 schemas said of every message the
//           client sent, as the text of an agent message
//
// terminal/cancel stops the hello terminal: it answers, then reports the exit
// status and an idle state with no background work. auth/login is answered
// for the method "ts-login". session/resume with replayFrom start replays one
// agent message, then the state. Everything else is left to the SDK.

import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { WireChecker, stdioStream, tap } from "./wire.mjs";

const wire = new WireChecker(2);
const sessions = new Map(); // sessionId -> {terminals: Set of running terminal ids}
let prompts = 0;
let logins = 0;

const turns = {
  async hello({ sessionId, update, messageId }) {
    const term = `term-${messageId}`;
    sessions.get(sessionId).terminals.add(term);
    await update({ sessionUpdate: "agent_message_chunk", messageId: `agent-${messageId}`, content: { type: "text", text: "Hello " } });
    await update({ sessionUpdate: "agent_message_chunk", messageId: `agent-${messageId}`, content: { type: "text", text: "from TS v2" } });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "ts-tool-1", title: "Build", kind: "execute", status: "in_progress" });
    await update({ sessionUpdate: "terminal_update", terminalId: term, command: "make -j4", cwd: "/tmp", capabilities: { cancel: {} } });
    await update({ sessionUpdate: "terminal_output_chunk", terminalId: term, data: Buffer.from("building...\n").toString("base64") });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "ts-tool-1", status: "completed", title: null, content: [{ type: "terminal", terminalId: term }] });
    return { stopReason: "end_turn" };
  },
  async fail() {
    return { stopReason: "error", error: { code: -32603, message: "the TS model is gone" } };
  },
  async wire({ sessionId, update, messageId }) {
    await update({
      sessionUpdate: "agent_message",
      messageId: `agent-${messageId}`,
      content: [{ type: "text", text: JSON.stringify({ checked: wire.checked, problems: wire.problems, logins }) }],
    });
    return { stopReason: "end_turn" };
  },
};

function background(sessionId) {
  return [...sessions.get(sessionId).terminals].map((terminalId) => ({ type: "terminal", terminalId }));
}

const app = acp
  .agent({ name: "acpterm-interop-v2-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: 2,
    info: { name: "acpterm-interop-v2-agent", version: "1.0.0" },
    capabilities: { session: { prompt: { embeddedContext: {} } } },
    authMethods: [{ type: "agent", methodId: "ts-login", name: "Log in" }],
  }))
  .onRequest(acp.methods.agent.auth.login, ({ params }) => {
    if (params.methodId !== "ts-login") throw acp.RequestError.invalidParams({ methodId: params.methodId });
    logins++;
    return {};
  })
  .onRequest(acp.methods.agent.session.new, () => {
    const sessionId = `ts-v2-session-${sessions.size + 1}`;
    sessions.set(sessionId, { terminals: new Set() });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.resume, async ({ params, client }) => {
    if (!sessions.has(params.sessionId)) sessions.set(params.sessionId, { terminals: new Set() });
    const update = (u) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: u });
    if (params.replayFrom?.type === "start") {
      await update({ sessionUpdate: "agent_message", messageId: "replayed-1", content: [{ type: "text", text: "from before" }] });
    }
    await update({ sessionUpdate: "state_update", state: "idle", background: background(params.sessionId) });
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.invalidParams({ sessionId: params.sessionId }, "unknown session");
    const text = params.prompt.find((b) => b.type === "text")?.text ?? "";
    const turn = turns[text];
    if (!turn) throw acp.RequestError.invalidParams({ prompt: text }, "no scripted turn");
    const messageId = `user-${++prompts}`;
    const update = (u) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: u });
    await update({ sessionUpdate: "state_update", state: "running", background: background(params.sessionId) });
    // The turn goes on after the acknowledgement, as v2 has it.
    setImmediate(() =>
      turn({ sessionId: params.sessionId, update, messageId })
        .then((end) => update({ sessionUpdate: "state_update", state: "idle", background: background(params.sessionId), ...end }))
        .catch(() => {}), // the client went away
    );
    return { messageId };
  })
  .onRequest(acp.methods.agent.terminal.cancel, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session?.terminals.has(params.terminalId)) {
      throw acp.RequestError.invalidParams({ terminalId: params.terminalId }, "unknown or exited terminal");
    }
    session.terminals.delete(params.terminalId);
    const update = (u) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: u });
    // Accepted now; the exit and the new background list follow.
    setImmediate(() =>
      update({ sessionUpdate: "terminal_update", terminalId: params.terminalId, exitStatus: { exitCode: null, signal: "SIGTERM" }, capabilities: null })
        .then(() => update({ sessionUpdate: "state_update", state: "idle", background: background(params.sessionId) }))
        .catch(() => {}),
    );
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, () => {});

const conn = app.connect(tap(stdioStream(), (dir, msg) => wire.see(dir, msg)));
await conn.closed;
const reason = conn.signal.reason;
if (reason instanceof Error && reason.message !== "ACP connection closed") {
  console.error(`${process.argv[1]}: connection ended: ${reason.message}`);
}
