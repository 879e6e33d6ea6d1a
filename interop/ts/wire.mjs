// Helpers shared by the interop scripts: stdio plumbing for the SDK, a tap
// that sees every JSON-RPC message in both directions, and a check of each
// message against the SDK's own generated schemas.
//
// Why the check: the SDK validates the params its handlers receive, but
// leniently (a field of the wrong type quietly becomes "absent", unknown
// fields are stripped), and it does not validate the results of its own
// requests at all. So we parse every message we receive with the SDK's zod
// schema for its method and report any difference between what came over the
// wire and what the SDK kept: that is exactly where a peer's JSON and the SDK
// disagree.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
// Not part of the SDK's public exports; reached by path on purpose, so that
// the check uses the very schemas the SDK validates with.
import * as z from "../node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";
import * as z2 from "../node_modules/@agentclientprotocol/sdk/dist/v2/schema/zod.gen.js";

// stdioStream connects the SDK to this process's own stdin and stdout (the
// agent side of a stdio transport).
export function stdioStream() {
  return acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
}

// childStream connects the SDK to a spawned agent's stdio (the client side).
export function childStream(child) {
  return acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
}

// tap returns a Stream that hands every message to record(direction, msg)
// before it is read ("in") or written ("out").
export function tap(stream, record) {
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(msg, ctl) {
        record("in", msg);
        ctl.enqueue(msg);
      },
    }),
  );
  const out = new TransformStream({
    transform(msg, ctl) {
      record("out", msg);
      ctl.enqueue(msg);
    },
  });
  out.readable.pipeTo(stream.writable).catch(() => {});
  return { readable, writable: out.writable };
}

// Schemas per method: what the request (or notification) carries and what its
// result is.
const schemas = {
  initialize: [z.zInitializeRequest, z.zInitializeResponse],
  "session/new": [z.zNewSessionRequest, z.zNewSessionResponse],
  "session/prompt": [z.zPromptRequest, z.zPromptResponse],
  "session/cancel": [z.zCancelNotification, null],
  "session/update": [z.zSessionNotification, null],
  "session/request_permission": [z.zRequestPermissionRequest, z.zRequestPermissionResponse],
  "fs/read_text_file": [z.zReadTextFileRequest, z.zReadTextFileResponse],
  "fs/write_text_file": [z.zWriteTextFileRequest, z.zWriteTextFileResponse],
  "terminal/create": [z.zCreateTerminalRequest, z.zCreateTerminalResponse],
  "terminal/output": [z.zTerminalOutputRequest, z.zTerminalOutputResponse],
  "terminal/wait_for_exit": [z.zWaitForTerminalExitRequest, z.zWaitForTerminalExitResponse],
  "terminal/kill": [z.zKillTerminalRequest, z.zKillTerminalResponse],
  "terminal/release": [z.zReleaseTerminalRequest, z.zReleaseTerminalResponse],
  "$/cancel_request": [z.zCancelRequestNotification, null],
};

// v2Schemas are the same for ACP v2 (experimental/v2 in the SDK).
const v2Schemas = {
  initialize: [z2.zInitializeRequest, z2.zInitializeResponse],
  "auth/login": [z2.zLoginAuthRequest, z2.zLoginAuthResponse],
  "auth/logout": [z2.zLogoutAuthRequest, z2.zLogoutAuthResponse],
  "session/new": [z2.zNewSessionRequest, z2.zNewSessionResponse],
  "session/list": [z2.zListSessionsRequest, z2.zListSessionsResponse],
  "session/resume": [z2.zResumeSessionRequest, z2.zResumeSessionResponse],
  "session/close": [z2.zCloseSessionRequest, z2.zCloseSessionResponse],
  "session/prompt": [z2.zPromptRequest, z2.zPromptResponse],
  "session/cancel": [z2.zCancelSessionNotification, null],
  "session/update": [z2.zUpdateSessionNotification, null],
  "session/request_permission": [z2.zRequestPermissionRequest, z2.zRequestPermissionResponse],
  "terminal/cancel": [z2.zCancelTerminalRequest, z2.zCancelTerminalResponse],
  "tool_call/cancel": [z2.zCancelToolCallRequest, z2.zCancelToolCallResponse],
  "$/cancel_request": [z2.zCancelRequestNotification, null],
};

// WireChecker checks the messages one side receives. Feed it every message
// in both directions (it learns the method of each outgoing request so it can
// check the response that comes back).
export class WireChecker {
  problems = [];
  checked = 0;
  #sent = new Map(); // our request id -> method
  #schemas;

  // version 2 checks against the v2 schemas.
  constructor(version = 1) {
    this.#schemas = version === 2 ? v2Schemas : schemas;
  }

  see(direction, msg) {
    if (direction === "out") {
      if ("method" in msg && "id" in msg) this.#sent.set(msg.id, msg.method);
      return;
    }
    if ("method" in msg) {
      this.#check(msg.method, "params", this.#schemas[msg.method]?.[0], msg.params ?? {});
    } else if ("result" in msg) {
      const method = this.#sent.get(msg.id);
      this.#sent.delete(msg.id);
      // An empty result may come as null; the SDK turns that into {}.
      this.#check(method, "result", this.#schemas[method]?.[1], msg.result ?? {});
    } else if ("error" in msg) {
      this.#sent.delete(msg.id);
    }
  }

  #check(method, part, schema, raw) {
    if (!schema) return;
    this.checked++;
    const got = schema.safeParse(raw);
    if (!got.success) {
      this.problems.push({ method, part, error: got.error.message, raw });
      return;
    }
    for (const path of differences(raw, got.data, "")) {
      if (this.#schemas === schemas && offerOfV2(method, part, raw) && (path === "/info" || path === "/capabilities")) {
        // An offer of 2 carries v2's members beside v1's, for an agent
        // that answers 2; a v1 agent drops them, as it should.
        continue;
      }
      this.problems.push({ method, part, path, note: "changed or dropped by the SDK's schema", raw });
    }
  }
}

// offerOfV2 says whether raw is the params of an initialize that asks for
// protocol version 2 or later.
function offerOfV2(method, part, raw) {
  return method === "initialize" && part === "params" && typeof raw.protocolVersion === "number" && raw.protocolVersion >= 2;
}

// differences lists the paths where the received JSON and what the schema
// kept differ. A null that became absent is not a difference (the two mean
// the same in ACP), nor is a default the schema filled in for an absent field.
function differences(raw, kept, path) {
  if (raw === undefined || (raw === null && kept === undefined)) return [];
  if (typeof raw !== "object" || raw === null || typeof kept !== "object" || kept === null) {
    return JSON.stringify(raw) === JSON.stringify(kept) ? [] : [path || "."];
  }
  if (Array.isArray(raw) !== Array.isArray(kept)) return [path || "."];
  const out = [];
  const keys = new Set([...Object.keys(raw), ...Object.keys(kept)]);
  for (const k of keys) {
    out.push(...differences(raw[k], kept[k], `${path}/${k}`));
  }
  return out;
}

// errorInfo reduces a thrown value to what crossed the wire.
export function errorInfo(e) {
  if (e instanceof acp.RequestError) return { code: e.code, message: e.message, data: e.data ?? null };
  return { code: null, message: String(e?.message ?? e) };
}

// withTimeout rejects if p has not settled within ms: every step a script
// waits on is bounded, so a hang becomes a report instead of a stuck test.
export function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// STEP_TIMEOUT_MS bounds each step of a client script, and each wait in it.
export const STEP_TIMEOUT_MS = 20_000;

// clientScript starts a client script run as `node NAME WORKSPACE -- AGENT
// [ARGS...]`: it spawns the agent and returns
//   workspace  the directory the script works in;
//   print      writes one JSON object as a line on stdout;
//   stream     the agent's stdio, tapped: every message is printed as
//              {"kind":"wire",...} and checked against the SDK's schemas;
//   step       runs one bounded step of the script and prints its outcome;
//   finish     ends the agent (closing its stdin, SIGKILL if it does not
//              exit within 10 s) and prints its exit and the wire check.
export function clientScript(name, version = 1) {
  const [workspace, dashdash, agentCmd, ...agentArgs] = process.argv.slice(2);
  if (!workspace || dashdash !== "--" || !agentCmd) {
    console.error(`usage: node ${name} WORKSPACE -- AGENT [ARGS...]`);
    process.exit(2);
  }
  const print = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
  const wire = new WireChecker(version);
  const child = spawn(agentCmd, agentArgs, { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const stream = tap(childStream(child), (dir, msg) => {
    print({ kind: "wire", dir, msg });
    wire.see(dir, msg);
  });
  async function step(stepName, fn) {
    try {
      print({ kind: "step", step: stepName, ok: (await withTimeout(fn(), STEP_TIMEOUT_MS, stepName)) ?? null });
    } catch (e) {
      print({ kind: "step", step: stepName, error: errorInfo(e) });
    }
  }
  async function finish() {
    // Closing stdin is how a client ends a stdio agent.
    child.stdin.end();
    const status = await withTimeout(exited, 10_000, "agent exit").catch((e) => {
      child.kill("SIGKILL");
      return { error: String(e.message) };
    });
    print({ kind: "step", step: "agent_exit", ok: status });
    print({ kind: "wire-check", checked: wire.checked, problems: wire.problems });
  }
  return { workspace, print, stream, step, finish };
}
