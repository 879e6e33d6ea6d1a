// scripted-client: the official SDK's client driving acpterm's built-in
// agent (`acpterm agent`, which runs each prompt line as `sh -c LINE` in the
// client's terminals). Its terminals are scripted, not real: each known
// command line has a fixed output and exit status, so the test sees exactly
// what the Go agent sends for a success, a failure, a signal and a
// cancellation.
//
//   node scripted-client.mjs WORKSPACE -- AGENT [ARGS...]
//
// It prints one JSON object per line on stdout:
//   {"kind":"wire","dir":"in"|"out","msg":...}  every JSON-RPC message
//   {"kind":"update","update":...}              a session/update as the SDK parsed it
//   {"kind":"event","event":...}                what the scripted terminals saw
//   {"kind":"step","step":NAME,...}             the outcome of each prompt
//   {"kind":"wire-check","checked":N,"problems":[...]}

import * as acp from "@agentclientprotocol/sdk";
import { STEP_TIMEOUT_MS, clientScript, errorInfo, withTimeout } from "./wire.mjs";

const { workspace, print, stream, step, finish } = clientScript("scripted-client.mjs");

// The scripted command lines. "hang" runs until terminal/kill.
const script = {
  "echo interop": { output: "interop\n", exit: { exitCode: 0, signal: null } },
  "exit 3": { output: "", exit: { exitCode: 3, signal: null } },
  "kill -TERM $$": { output: "", exit: { exitCode: null, signal: "SIGTERM" } },
  "sleep 1000": { output: "sleeping\n", hang: true },
};

function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

const aborted = (signal) =>
  new Promise((r) => (signal.aborted ? r() : signal.addEventListener("abort", () => r(), { once: true })));

// Terminals by id.
const terminals = new Map();
let nextId = 1;

function lookup({ sessionId, terminalId }) {
  const t = terminals.get(terminalId);
  if (!t || t.released || t.sessionId !== sessionId) {
    throw acp.RequestError.invalidParams({ terminalId }, `terminal ${terminalId} not found`);
  }
  return t;
}

const app = acp
  .client({ name: "acpterm-interop-scripted-client" })
  // What the agent shows, as the SDK parsed it: the test reads it the way a
  // client that renders no terminal would, from the text content alone.
  .onNotification(acp.methods.client.session.update, ({ params }) => print({ kind: "update", update: params.update }))
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((o) => o.kind.startsWith("allow"));
    return { outcome: allow ? { outcome: "selected", optionId: allow.optionId } : { outcome: "cancelled" } };
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    // The shell line is what a `sh -c LINE` (or an args-less command) runs.
    const line = params.command === "sh" && params.args?.[0] === "-c" ? params.args[1] : params.command;
    const s = script[line] ?? { output: `not scripted: ${line}\n`, exit: { exitCode: 127, signal: null } };
    const id = `ts-term-${nextId++}`;
    terminals.set(id, { sessionId: params.sessionId, line, output: s.output, exit: s.hang ? null : s.exit, killed: deferred() });
    return { terminalId: id };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const t = lookup(params);
    return { output: t.output, truncated: false, ...(t.exit ? { exitStatus: t.exit } : {}) };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params, signal, agent }) => {
    const t = lookup(params);
    if (!t.exit) {
      // The user gives up on the hanging command: session/cancel. The agent
      // should then withdraw this wait ($/cancel_request) and kill.
      if (!t.cancelSent) {
        t.cancelSent = true;
        await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      }
      const how = await withTimeout(
        Promise.race([t.killed.promise.then(() => "killed"), aborted(signal).then(() => "aborted")]),
        STEP_TIMEOUT_MS,
        `wait_for_exit ${params.terminalId}`,
      );
      if (how === "aborted") {
        print({ kind: "event", event: "wait-aborted", terminalId: params.terminalId, reason: errorInfo(signal.reason) });
        throw signal.reason;
      }
    }
    return t.exit;
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    const t = lookup(params);
    if (!t.exit) {
      t.exit = { exitCode: null, signal: "SIGTERM" };
      t.killed.resolve();
    }
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    const t = lookup(params);
    t.released = true;
    if (!t.exit) t.exit = { exitCode: null, signal: "SIGKILL" };
    t.killed.resolve();
  });

await app.connectWith(stream, async (agent) => {
  const A = acp.methods.agent;
  await step("initialize", () =>
    agent.request(A.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { terminal: true },
      clientInfo: { name: "acpterm-interop-scripted-client", version: "1.0.0" },
    }),
  );
  let sessionId;
  await step("session_new", async () => {
    const r = await agent.request(A.session.new, { cwd: workspace, mcpServers: [] });
    sessionId = r.sessionId;
    return r;
  });
  const prompt = (text) => agent.request(A.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  // A success, a failure and a signal, one turn.
  await step("prompt_commands", () => prompt("echo interop\nexit 3\nkill -TERM $$"));
  // A command that hangs until the turn is cancelled; the next line never runs.
  await step("prompt_cancel", () => prompt("sleep 1000\necho never"));
});

await finish();
