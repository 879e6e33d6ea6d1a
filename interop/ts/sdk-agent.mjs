// sdk-agent: the official SDK's agent, driven by the Go SDK's client
// (ClientConn via acp.StartAgent; see sdk_test.go). Each prompt text names a
// scripted turn:
//
//   hello              most kinds of update (with explicit nulls where the
//                      schema allows them), a permission request, both fs
//                      methods; the last chunk is a JSON summary of what the
//                      client answered
//   wait-for-cancel    says "waiting", ends "cancelled" on session/cancel
//   block              says "blocking", waits for $/cancel_request of this
//                      prompt, says what the abort carried, answers -32800
//   cancel-own-request asks permission and withdraws the request at once
//                      ($/cancel_request); reports what came back
//   wire               reports what the SDK's schemas said about every
//                      message the client sent
//
// Everything else (unknown methods, bad params) is left to the SDK.

import * as acp from "@agentclientprotocol/sdk";
import { join } from "node:path";
import { WireChecker, errorInfo, stdioStream, tap, withTimeout } from "./wire.mjs";

const wire = new WireChecker();
const sessions = new Map(); // sessionId -> {cwd, cancelled: deferred}

function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

async function attempt(p) {
  try {
    return { ok: (await p) ?? {} };
  } catch (e) {
    return { error: errorInfo(e) };
  }
}

const turns = {
  async hello({ client, sessionId, cwd, update, say }) {
    const notes = join(cwd, "notes.txt");
    await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "thinking" } });
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hello from TS" }, messageId: null });
    await update({
      sessionUpdate: "plan",
      entries: [{ content: "read the notes", priority: "high", status: "in_progress" }],
    });
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "ts-call-1",
      title: "Read the notes",
      kind: "read",
      status: "pending",
      locations: [{ path: notes, line: null }],
      rawInput: { path: notes },
    });
    const permission = await attempt(
      client.request(acp.methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId: "ts-call-1", title: null, kind: "read", status: "pending", content: null },
        options: [
          { optionId: "yes", name: "Allow", kind: "allow_once" },
          { optionId: "always", name: "Always allow", kind: "allow_always" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      }),
    );
    const read = await attempt(client.request(acp.methods.client.fs.readTextFile, { sessionId, path: notes, line: 2, limit: 2 }));
    const readAll = await attempt(
      client.request(acp.methods.client.fs.readTextFile, { sessionId, path: notes, line: null, limit: null }),
    );
    const write = await attempt(
      client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: join(cwd, "out.txt"), content: "written by TS\n" }),
    );
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "ts-call-1",
      status: "completed",
      title: null,
      kind: null,
      content: [{ type: "content", content: { type: "text", text: "read 2 lines" } }],
      rawOutput: { lines: 2 },
    });
    await say(JSON.stringify({ permission, read, readAll, write }));
  },

  async "wait-for-cancel"({ say, session }) {
    session.cancelled = deferred();
    await say("waiting");
    await withTimeout(session.cancelled.promise, 20_000, "session/cancel");
    return "cancelled";
  },

  async block({ say, signal }) {
    await say("blocking");
    const reason = await withTimeout(
      new Promise((r) => (signal.aborted ? r(signal.reason) : signal.addEventListener("abort", () => r(signal.reason)))),
      20_000,
      "$/cancel_request",
    );
    await say(JSON.stringify({ aborted: errorInfo(reason) }));
    throw reason;
  },

  async "cancel-own-request"({ client, sessionId, say }) {
    const abort = new AbortController();
    const pending = client.request(
      acp.methods.client.session.requestPermission,
      {
        sessionId,
        toolCall: { toolCallId: "cancel-me", title: "Withdrawn at once" },
        options: [{ optionId: "yes", name: "Allow", kind: "allow_once" }],
      },
      { cancellationSignal: abort.signal },
    );
    abort.abort();
    await say(JSON.stringify({ withdrawn: await attempt(pending) }));
  },

  async wire({ say }) {
    await say(JSON.stringify({ checked: wire.checked, problems: wire.problems }));
  },
};

const app = acp
  .agent({ name: "acpterm-interop-sdk-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false, promptCapabilities: { embeddedContext: true } },
    agentInfo: { name: "acpterm-interop-sdk-agent", title: null, version: "1.0.0" },
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-sdk-session-${sessions.size + 1}`;
    sessions.set(sessionId, { cwd: params.cwd });
    return { sessionId, modes: null };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    const text = params.prompt.find((b) => b.type === "text")?.text ?? "";
    const turn = turns[text];
    if (!turn) throw acp.RequestError.invalidParams({ prompt: text }, "no scripted turn");
    const update = (u) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: u });
    const say = (t) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
    const stop = await turn({ client, sessionId: params.sessionId, cwd: session.cwd, session, update, say, signal });
    return { stopReason: stop ?? "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancelled?.resolve();
  });

const conn = app.connect(tap(stdioStream(), (dir, msg) => wire.see(dir, msg)));
await conn.closed;
// Say why the connection ended unless the client just closed it.
const reason = conn.signal.reason;
if (reason instanceof Error && reason.message !== "ACP connection closed") {
  console.error(`${process.argv[1]}: connection ended: ${reason.message}`);
}
