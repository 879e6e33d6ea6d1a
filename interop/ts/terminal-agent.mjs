// terminal-agent: an ACP agent written with the official TypeScript SDK that
// puts a client's terminal runtime through every case of the terminal table
// in DESIGN.md that an agent can observe, using the SDK's createTerminal and
// its TerminalHandle.
//
// It observes and reports; it does not judge. Each case ends with one
// agent_message_chunk whose text is a JSON line {"case": NAME, ...what was
// seen}; the Go test (terminal_agent_test.go) decides what is right. The
// prompt may name the cases to run (space separated); an empty prompt or
// "all" runs them all, and "-NAME" leaves the case NAME out. The "wire" case reports what the SDK's own schemas
// said about every message the client sent.
//
// Three control words instead of cases exercise a client's handling of how a
// turn ends: "refuse" ends it with stopReason refusal, "crash" exits the
// process mid-turn, "hang" says "hanging" and waits for session/cancel, then
// ends it with stopReason cancelled.
//
// Nothing here waits on the clock for a state: commands that must still be
// running block on a FIFO that the case opens when it is done looking, and
// the only polling is for output to arrive from a process.

import * as acp from "@agentclientprotocol/sdk";
import { execFileSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, promises as fsp } from "node:fs";
import { join } from "node:path";
import { WireChecker, errorInfo, stdioStream, tap, withTimeout } from "./wire.mjs";

const CASE_TIMEOUT_MS = 20_000;
// SLOW_CASE_TIMEOUT_MS bounds the cases that move tens of MiB: a Go host
// built with -race takes about 20 s for 16 MiB of binary output on a loaded
// 2-core machine (6 s without -race), which is not what they test.
const SLOW_CASE_TIMEOUT_MS = 90_000;
const SLOW_CASES = new Set(["binary_output_at_ceiling"]);

const wire = new WireChecker();
const sessions = new Map(); // sessionId -> cwd
const cancels = new Map(); // sessionId -> resolve of the pending "hang"
let clientCapabilities = {};

// Gate is a FIFO a command blocks on (`read line < FIFO`) until the case
// opens it.
class Gate {
  constructor(dir, name) {
    this.path = join(dir, name);
    execFileSync("mkfifo", [this.path]);
  }
  // open lets the blocked command go on; the write completes once the
  // command has the FIFO open for reading.
  open(line = "go") {
    return withTimeout(fsp.writeFile(this.path, line + "\n"), 10_000, `open gate ${this.path}`);
  }
}

// attempt runs a call that may fail and returns what came back either way.
async function attempt(p) {
  try {
    return { ok: (await p) ?? {} };
  } catch (e) {
    return { error: errorInfo(e) };
  }
}

// pollOutput reads the terminal's output until want(output) holds: output
// arrives from a running process whenever it arrives, so this is the one
// place that polls (bounded).
async function pollOutput(term, want, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const out = await term.currentOutput();
    if (want(out) || Date.now() > deadline) return out;
    await new Promise((r) => setTimeout(r, 20));
  }
}

// The cases. Each gets {client, sessionId, cwd, scratch, gate(name),
// update(u)} and returns what it saw.
const cases = {
  // terminal/create answers while the command still runs.
  async create_returns_while_running(t) {
    const gate = t.gate("create");
    const started = Date.now();
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", 'read line < "$1"; echo "got $line"', "sh", gate.path],
    });
    const createMs = Date.now() - started;
    const before = await term.currentOutput();
    await gate.open("go");
    const exit = await term.waitForExit();
    const after = await term.currentOutput();
    await term.release();
    return { terminalId: term.id, createMs, exitStatusWhileRunning: before.exitStatus ?? null, exit, output: after.output };
  },

  // terminal/output shows what the command printed so far, before it exits.
  async output_while_running(t) {
    const gate = t.gate("output");
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", 'printf "partial\\n"; read line < "$1"; printf "rest\\n"', "sh", gate.path],
    });
    const running = await pollOutput(term, (o) => o.output.includes("partial"));
    await gate.open();
    const exit = await term.waitForExit();
    const final = await term.currentOutput();
    await term.release();
    return {
      whileRunning: { output: running.output, truncated: running.truncated, exitStatus: running.exitStatus ?? null },
      exit,
      final: { output: final.output, truncated: final.truncated, exitStatus: final.exitStatus ?? null },
    };
  },

  // An argv command's exit code, stdout and stderr merged in order; the
  // terminal is embedded in a tool call so that the client shows it live.
  async exit_code(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", "echo to-stdout; echo to-stderr >&2; exit 7"],
    });
    const toolCallId = "ts-exit-code";
    await t.update({
      sessionUpdate: "tool_call",
      toolCallId,
      title: "exit 7",
      kind: "execute",
      status: "in_progress",
      content: [{ type: "terminal", terminalId: term.id }],
    });
    const exit = await term.waitForExit();
    const out = await term.currentOutput();
    await t.update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: "failed",
      content: [{ type: "terminal", terminalId: term.id }],
      rawOutput: exit,
    });
    await term.release();
    return { terminalId: term.id, exit, exitKeys: Object.keys(exit).sort(), output: out.output, truncated: out.truncated, exitStatus: out.exitStatus ?? null };
  },

  // args absent or empty: command is a shell line.
  async shell_line(t) {
    const line = 'echo "$((6*7))" | tr 4 X';
    const absent = await t.client.createTerminal({ sessionId: t.sessionId, command: line });
    const empty = await t.client.createTerminal({ sessionId: t.sessionId, command: line, args: [] });
    const res = {};
    for (const [name, term] of [["argsAbsent", absent], ["argsEmpty", empty]]) {
      const exit = await term.waitForExit();
      const out = await term.currentOutput();
      await term.release();
      res[name] = { exit, output: out.output };
    }
    return res;
  },

  // args present: the command is exec'd as is, nothing expanded or re-split.
  async exec_argv(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "printf",
      args: ["%s|", "a b", "$HOME", "*", "it's"],
    });
    const exit = await term.waitForExit();
    const out = await term.currentOutput();
    await term.release();
    return { exit, output: out.output };
  },

  // outputByteLimit keeps the newest bytes, cut forward to a character start.
  async truncation(t) {
    // "head-" then 100 three-byte euro signs: 305 bytes. The newest 10 bytes
    // start inside a euro sign, so 9 bytes (three euro signs) are kept.
    const euros = 'printf "head-"; i=0; while [ $i -lt 100 ]; do printf "\\342\\202\\254"; i=$((i+1)); done';
    const run = async (command, outputByteLimit) => {
      const term = await t.client.createTerminal({ sessionId: t.sessionId, command: "sh", args: ["-c", command], outputByteLimit });
      const exit = await term.waitForExit();
      const out = await term.currentOutput();
      await term.release();
      return { exit, output: out.output, bytes: Buffer.byteLength(out.output), truncated: out.truncated };
    };
    return {
      limit10: await run(euros, 10),
      limitZero: await run("echo hi", 0),
      underLimit: await run("echo hi", 1000),
      invalidUTF8: await run('printf "a\\377b"', 1000),
    };
  },

  // kill: SIGTERM to the group; the terminal stays valid; the exit status
  // names the signal and has no exit code.
  async kill_sigterm(t) {
    const term = await t.client.createTerminal({ sessionId: t.sessionId, command: "sleep", args: ["30"] });
    const kill = await attempt(term.kill());
    const afterKill = await attempt(term.currentOutput());
    const exit = await term.waitForExit();
    const final = await term.currentOutput();
    await term.release();
    return { kill, outputAfterKill: afterKill.error ?? "ok", exit, exitStatus: final.exitStatus ?? null };
  },

  // A command that ignores SIGTERM gets SIGKILL after the grace period.
  async kill_sigkill(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", "trap '' TERM; echo armed; sleep 30"],
    });
    const armed = await pollOutput(term, (o) => o.output.includes("armed"));
    const started = Date.now();
    await term.kill();
    const exit = await term.waitForExit();
    const killMs = Date.now() - started;
    await term.release();
    return { armed: armed.output.includes("armed"), exit, killMs };
  },

  // After release the id is invalid for every method, release included.
  async release_invalidates(t) {
    const term = await t.client.createTerminal({ sessionId: t.sessionId, command: "sleep", args: ["30"] });
    const release = await attempt(term.release());
    return {
      terminalId: term.id,
      release,
      output: await attempt(term.currentOutput()),
      waitForExit: await attempt(term.waitForExit()),
      kill: await attempt(term.kill()),
      releaseAgain: await attempt(term.release()),
    };
  },

  // An id that never existed.
  async unknown_id(t) {
    const params = { sessionId: t.sessionId, terminalId: "term_unknown_interop" };
    const m = acp.methods.client.terminal;
    return {
      terminalId: params.terminalId,
      output: await attempt(t.client.request(m.output, params)),
      waitForExit: await attempt(t.client.request(m.waitForExit, params)),
      kill: await attempt(t.client.request(m.kill, params)),
      release: await attempt(t.client.request(m.release, params)),
    };
  },

  // A live terminal addressed through another session id is not found.
  async other_session(t) {
    const term = await t.client.createTerminal({ sessionId: t.sessionId, command: "sleep", args: ["30"] });
    const output = await attempt(
      t.client.request(acp.methods.client.terminal.output, { sessionId: "sess_not_this_one", terminalId: term.id }),
    );
    await term.release();
    return { terminalId: term.id, output };
  },

  // The request's env goes on top of the client's defaults; bad names fail.
  async env(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", 'printf "%s|%s|%s|%s" "$ACPTERM_INTEROP" "$PAGER" "$GIT_PAGER" "$GIT_TERMINAL_PROMPT"'],
      env: [
        { name: "ACPTERM_INTEROP", value: "from ts ✓" },
        { name: "PAGER", value: "more" },
      ],
    });
    await term.waitForExit();
    const out = await term.currentOutput();
    await term.release();
    const bad = async (name) => {
      const r = await attempt(t.client.createTerminal({ sessionId: t.sessionId, command: "true", env: [{ name, value: "x" }] }));
      if (r.ok) await r.ok.release();
      return r.error ?? "created";
    };
    return { output: out.output, nameWithEquals: await bad("BAD=NAME"), emptyName: await bad("") };
  },

  // cwd: absolute is used, absent means the session's cwd, relative fails.
  async cwd(t) {
    const pwd = async (cwd) => {
      const r = await attempt(t.client.createTerminal({ sessionId: t.sessionId, command: "pwd", args: ["-P"], cwd }));
      if (!r.ok) return r;
      await r.ok.waitForExit();
      const out = await r.ok.currentOutput();
      await r.ok.release();
      return { output: out.output.trim() };
    };
    return {
      scratch: realpathSync(t.scratch),
      sessionCwd: realpathSync(t.cwd),
      explicit: await pwd(t.scratch),
      absent: await pwd(undefined),
      relative: await pwd("relative/dir"),
    };
  },

  // stdin is /dev/null: a command that reads it ends at once.
  async stdin_devnull(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", 'cat; echo "eof:$?"; readlink /proc/self/fd/0 || echo unknown'],
    });
    const exit = await term.waitForExit();
    const out = await term.currentOutput();
    await term.release();
    return { exit, output: out.output };
  },

  // wait_for_exit returns when the command exits, even though a background
  // grandchild still holds the output pipe.
  async grandchild_pipe(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", "sleep 30 & echo parent-done"],
    });
    const started = Date.now();
    const exit = await term.waitForExit();
    const waitMs = Date.now() - started;
    const out = await term.currentOutput();
    await term.release();
    return { exit, waitMs, output: out.output };
  },

  // Several waits at once, output while they wait, and a wait after exit.
  async concurrent_waits(t) {
    const gate = t.gate("waits");
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", 'read line < "$1"; exit 3', "sh", gate.path],
    });
    const waits = [term.waitForExit(), term.waitForExit(), term.waitForExit()];
    const during = await term.currentOutput();
    await gate.open();
    const results = await Promise.all(waits);
    const again = await term.waitForExit();
    await term.release();
    return { exitStatusDuringWaits: during.exitStatus ?? null, results, again };
  },

  // $/cancel_request on a pending wait: -32800, and the command runs on.
  async wait_cancelled(t) {
    const gate = t.gate("cancel");
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "sh",
      args: ["-c", 'read line < "$1"; echo after', "sh", gate.path],
    });
    const abort = new AbortController();
    const pending = t.client.request(
      acp.methods.client.terminal.waitForExit,
      { sessionId: t.sessionId, terminalId: term.id },
      { cancellationSignal: abort.signal },
    );
    abort.abort();
    const cancelled = await attempt(pending);
    const afterCancel = await term.currentOutput();
    await gate.open();
    const exit = await term.waitForExit();
    const out = await term.currentOutput();
    await term.release();
    return { cancelled, exitStatusAfterCancel: afterCancel.exitStatus ?? null, exit, output: out.output };
  },

  // Terminal ids are distinct.
  async ids_distinct(t) {
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const term = await t.client.createTerminal({ sessionId: t.sessionId, command: "true" });
      ids.push(term.id);
      await term.release();
    }
    return { ids };
  },

  // session/request_permission, as a client with a fixed policy answers it.
  async permission(t) {
    const toolCall = { toolCallId: "ts-permission", title: "interop permission", kind: "execute", status: "pending" };
    await t.update({ sessionUpdate: "tool_call", ...toolCall });
    const res = await attempt(
      t.client.request(acp.methods.client.session.requestPermission, {
        sessionId: t.sessionId,
        toolCall,
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "deny", name: "Deny", kind: "reject_once" },
        ],
      }),
    );
    await t.update({ sessionUpdate: "tool_call_update", toolCallId: toolCall.toolCallId, status: "completed" });
    return res;
  },

  // What the SDK's own schemas said about every message the client sent so
  // far (the next case may end the connection).
  async wire() {
    return { checked: wire.checked, problems: wire.problems };
  },

  // Output up to the client's own ceiling (no outputByteLimit asked) must
  // still fit in one message this SDK accepts (32 MiB by default), whatever
  // the bytes: random bytes grow on the wire (U+FFFD, \u escapes). Last,
  // because a message over the limit ends the connection.
  async binary_output_at_ceiling(t) {
    const term = await t.client.createTerminal({
      sessionId: t.sessionId,
      command: "head",
      args: ["-c", String(16 << 20), "/dev/urandom"],
    });
    await term.waitForExit();
    const out = await term.currentOutput();
    await term.release();
    return { chars: out.output.length, truncated: out.truncated };
  },
};

async function runCases(client, sessionId, prompt) {
  const cwd = sessions.get(sessionId);
  // Scratch space inside the session's cwd, since a client may confine
  // terminals to its workspace.
  const scratch = mkdtempSync(join(cwd, ".ts-interop-"));
  const t = {
    client,
    sessionId,
    cwd,
    scratch,
    gate: (name) => new Gate(scratch, name),
    update: (update) => client.notify(acp.methods.client.session.update, { sessionId, update }),
  };
  const report = (obj) =>
    t.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify(obj) + "\n" } });

  const words = prompt.split(/\s+/).filter((w) => w && w !== "all");
  const wanted = words.filter((w) => !w.startsWith("-"));
  const left = new Set(words.filter((w) => w.startsWith("-")).map((w) => w.slice(1)));
  try {
    if (!clientCapabilities.terminal) {
      await report({ case: "capability", terminal: false });
      return;
    }
    for (const [name, run] of Object.entries(cases)) {
      if ((wanted.length > 0 && !wanted.includes(name)) || left.has(name)) continue;
      let seen;
      try {
        seen = await withTimeout(run(t), SLOW_CASES.has(name) ? SLOW_CASE_TIMEOUT_MS : CASE_TIMEOUT_MS, name);
      } catch (e) {
        seen = { failed: errorInfo(e) };
      }
      await report({ case: name, ...seen });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const app = acp
  .agent({ name: "acpterm-interop-terminal-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    clientCapabilities = params.clientCapabilities ?? {};
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {},
      agentInfo: { name: "acpterm-interop-terminal-agent", version: "1.0.0" },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-session-${sessions.size + 1}`;
    sessions.set(sessionId, params.cwd);
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt
      .filter((b) => b.type === "text")
      .map((b) => b.text)
      .join(" ")
      .trim();
    switch (text) {
      case "refuse":
        return { stopReason: "refusal" };
      case "crash":
        process.exit(1);
      case "hang": {
        const cancelled = new Promise((r) => cancels.set(params.sessionId, r));
        await client.notify(acp.methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hanging" } },
        });
        await withTimeout(cancelled, CASE_TIMEOUT_MS, "session/cancel");
        return { stopReason: "cancelled" };
      }
    }
    await runCases(client, params.sessionId, text);
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    cancels.get(params.sessionId)?.();
  });

const conn = app.connect(tap(stdioStream(), (dir, msg) => wire.see(dir, msg)));
await conn.closed;
// Say why the connection ended unless the client just closed it.
const reason = conn.signal.reason;
if (reason instanceof Error && reason.message !== "ACP connection closed") {
  console.error(`${process.argv[1]}: connection ended: ${reason.message}`);
}
