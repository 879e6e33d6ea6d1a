// sdk-client: the official SDK's client driving a Go agent (the Go SDK's
// AgentConn; see go_agent_test.go) through a fixed script.
//
//   node sdk-client.mjs WORKSPACE -- AGENT [ARGS...]
//
// It prints one JSON object per line on stdout, for the Go test to check:
//   {"kind":"wire","dir":"in"|"out","msg":...}  every JSON-RPC message
//   {"kind":"update","update":...}               a session/update as the SDK parsed it
//   {"kind":"request","method":...,"params":...} an agent request as the SDK parsed it
//   {"kind":"step","step":NAME,...}              the outcome of each step of the script
//   {"kind":"wire-check","checked":N,"problems":[...]}

import * as acp from "@agentclientprotocol/sdk";
import { join } from "node:path";
import { STEP_TIMEOUT_MS, clientScript, errorInfo, withTimeout } from "./wire.mjs";

const { workspace, print, stream, step, finish } = clientScript("sdk-client.mjs");

// The files the client serves, by absolute path.
const files = new Map([[join(workspace, "notes.txt"), "line one\nline two\nline three\nline four\n"]]);

// Events the script waits for, keyed by name; an update or request
// handler resolves them.
const waiters = new Map();
function entry(name) {
  if (!waiters.has(name)) {
    let resolve;
    const p = new Promise((r) => (resolve = r));
    waiters.set(name, { p, resolve });
  }
  return waiters.get(name);
}
const waitFor = (name) => withTimeout(entry(name).p, STEP_TIMEOUT_MS, `waiting for ${name}`);
const happened = (name, value) => entry(name).resolve(value);

const app = acp
  .client({ name: "acpterm-interop-sdk-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    print({ kind: "update", update: params.update });
    const u = params.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
      happened(`text:${u.content.text}`, u);
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal, agent }) => {
    print({ kind: "request", method: "session/request_permission", params });
    if (params.toolCall.toolCallId === "ask-then-cancel") {
      // The user cancels the turn while the agent waits for an answer:
      // session/cancel, then the agent is expected to withdraw this request
      // with $/cancel_request, and a cancelled outcome is the answer.
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      const aborted = await withTimeout(
        new Promise((r) => (signal.aborted ? r(signal.reason) : signal.addEventListener("abort", () => r(signal.reason)))),
        STEP_TIMEOUT_MS,
        "$/cancel_request for the pending permission",
      ).catch((e) => ({ timeout: String(e.message) }));
      happened("permission-aborted", errorInfo(aborted));
      return { outcome: { outcome: "cancelled" } };
    }
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    print({ kind: "request", method: "fs/read_text_file", params });
    const text = files.get(params.path);
    if (text === undefined) throw acp.RequestError.resourceNotFound(params.path);
    const lines = text.split(/(?<=\n)/);
    const from = (params.line ?? 1) - 1;
    const to = params.limit == null ? lines.length : from + params.limit;
    return { content: lines.slice(from, to).join("") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    print({ kind: "request", method: "fs/write_text_file", params });
    files.set(params.path, params.content);
    // No result: the SDK sends {}.
  });

const text = (t) => [{ type: "text", text: t }];

await app.connectWith(stream, async (agent) => {
  const A = acp.methods.agent;
  await step("initialize", () =>
    agent.request(A.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "acpterm-interop-sdk-client", version: "1.0.0" },
    }),
  );
  let sessionId;
  await step("session_new", async () => {
    const r = await agent.request(A.session.new, { cwd: workspace, mcpServers: [] });
    sessionId = r.sessionId;
    return r;
  });

  // A turn with streamed updates, a permission and both fs methods.
  await step("prompt_hello", () => agent.request(A.session.prompt, { sessionId, prompt: text("hello") }));

  // session/cancel while the agent waits: the turn ends "cancelled".
  await step("prompt_session_cancel", async () => {
    const turn = agent.request(A.session.prompt, { sessionId, prompt: text("wait-for-cancel") });
    await waitFor("text:waiting");
    await agent.notify(A.session.cancel, { sessionId });
    return turn;
  });

  // $/cancel_request for our own pending session/prompt.
  await step("prompt_cancel_request", async () => {
    const abort = new AbortController();
    const turn = agent.request(A.session.prompt, { sessionId, prompt: text("block") }, { cancellationSignal: abort.signal });
    await waitFor("text:blocking");
    abort.abort();
    return turn;
  });

  // session/cancel while the agent waits on our permission answer: the agent
  // withdraws the request ($/cancel_request) and ends the turn.
  await step("prompt_permission_cancel", async () => {
    const r = await agent.request(A.session.prompt, { sessionId, prompt: text("ask-then-cancel") });
    return { ...r, permissionAbort: await waitFor("permission-aborted") };
  });

  // What the Go agent answers to calls it cannot serve.
  await step("unknown_method", () => agent.request("_interop/unknown", { x: 1 }));
  await step("invalid_params", () => agent.request(A.session.new, { cwd: 5, mcpServers: [] }));
  await step("unknown_session", () => agent.request(A.session.prompt, { sessionId: "no-such-session", prompt: text("hello") }));
});

await finish();
