// An ACP agent built with the official TypeScript ACP SDK
// (@agentclientprotocol/sdk 2.4.0), used by Go tests as an independent peer
// (servers/host, internal/interop, examples/host). Spawned as a child
// process, it speaks newline-delimited JSON-RPC on stdin/stdout. What it does
// on session/prompt depends on the prompt's text and on its flags; see
// README.md for the list.
//
// stdout carries protocol messages only; every log line goes to stderr.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const log = (...args) => console.error("[acp-ts agent]", ...args);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const identity = (params) => params;

// Flags: --harn, --fail, --crash, --stop-reason=R, --terminal=KIND,
// --ignore-cancel, --report=PATH, --auth.
const flags = {};
for (const arg of process.argv.slice(2)) {
  const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
  if (!m) {
    log("unknown argument", arg);
    process.exit(2);
  }
  flags[m[1]] = m[2] ?? true;
}

const tour = JSON.parse(readFileSync(new URL("./tour.json", import.meta.url), "utf8"));

let nextSession = 0;
const sessions = new Map(); // sessionId -> { cwd }
// Sessions whose prompt turn the client cancelled with session/cancel.
const cancelled = new Set();
// What the client sent to the agent's extension methods.
const received = { pings: [], notes: [], aborted: [] };

// The Harn extension advertisement of a Harn runtime's initialize result.
const harnCapabilities = {
  _meta: {
    harn: {
      sessionUpdateExtensions: ["artifact", "progress", "log", "worker_update", "skill_activated", "reminder_emitted"],
      promptResultExtensionFields: ["terminal"],
    },
  },
};

// With --auth, authMethods as today's agents offer them: an API-key agent
// method (codex-acp's shape), and a terminal login only to a client that
// says it can run one (claude-agent-acp's rule).
let authenticated = false;
const authMethods = (caps) => [
  { id: "api-key", name: "API Key", description: "Use an API key", _meta: { "api-key": { provider: "openai" } } },
  ...(caps?.auth?.terminal ? [{ id: "login", name: "Log in", type: "terminal", args: ["--login"] }] : []),
];

const app = acp
  .agent({ name: "bridgekit-interop-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    log("initialize, client protocolVersion", params.protocolVersion, "clientCapabilities", JSON.stringify(params.clientCapabilities ?? {}));
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: flags.harn ? harnCapabilities : {},
      authMethods: flags.auth ? authMethods(params.clientCapabilities) : [],
      agentInfo: { name: "bridgekit-interop-agent", version: "0.0.0" },
    };
  })
  // With --auth: the API-key method takes OPENAI_API_KEY from the agent's
  // environment (as codex-acp's does); a prompt before it is refused.
  .onRequest(acp.methods.agent.authenticate, ({ params }) => {
    log("authenticate", params.methodId);
    if (params.methodId !== "api-key" || !process.env.OPENAI_API_KEY) {
      throw new acp.RequestError(-32603, "OPENAI_API_KEY is not set");
    }
    authenticated = true;
    return {};
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `interop-${nextSession++}`;
    sessions.set(sessionId, { cwd: params.cwd });
    log("session/new", sessionId, "cwd", params.cwd);
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    log("session/cancel", params.sessionId);
    cancelled.add(params.sessionId);
  })
  // Extension methods the Go client calls, "_"-prefixed as ACP requires.
  .onRequest("_bridgekit/ping", identity, ({ params }) => {
    received.pings.push(params);
    return { pong: params.value ?? null, notes: received.notes, aborted: received.aborted };
  })
  .onNotification("_bridgekit/note", identity, ({ params }) => {
    received.notes.push(params);
  })
  .onRequest("_bridgekit/slow", identity, async ({ params, signal }) => {
    // Answers only when the client cancels it ($/cancel_request).
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    log("_bridgekit/slow aborted", params.tag);
    received.aborted.push(params.tag);
    throw acp.RequestError.requestCancelled?.() ?? new acp.RequestError(-32800, "request cancelled");
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, requestId, signal }) => {
    const { sessionId } = params;
    log("session/prompt", sessionId, "id", requestId);
    const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
    const promptText = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("");
    if (flags.auth && !authenticated) {
      // As Claude does: session/new is accepted, the prompt is refused.
      throw acp.RequestError.authRequired();
    }

    // Failure modes, for hosts' exit statuses: each streams one update first.
    if (flags.fail || flags.crash || flags["stop-reason"]) {
      await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "working on it" } });
      if (flags.crash) {
        log("crashing on purpose");
        process.exit(3);
      }
      if (flags.fail) {
        throw new acp.RequestError(-32000, "model provider unavailable", {
          schema: "harn.acp.prompt_error.v1",
          terminalClass: "provider_unavailable",
          retryable: true,
        });
      }
      return { stopReason: flags["stop-reason"] };
    }

    if (promptText === "interop tour") {
      return interopTour(params, client, update);
    }
    // A prompt whose text is "ask permission" asks the client to delete a
    // file and, with --report=PATH, writes the answer as it came.
    if (promptText === "ask permission") {
      const cwd = sessions.get(sessionId)?.cwd ?? "/";
      const res = await askPermission(client, sessionId, {
        toolCallId: "delete-1",
        title: "delete_file",
        kind: "delete",
        status: "pending",
        locations: [{ path: `${cwd}/README.md` }],
        rawInput: { path: "README.md" },
      });
      if (flags.report) writeFileSync(flags.report, JSON.stringify({ permission: res }));
      return { stopReason: "end_turn" };
    }
    if (flags.harn && promptText !== "until cancelled") {
      return harnTour(params, client, update, promptText);
    }

    // Progress first, as Harn streams its output before it finishes a turn.
    for (const text of ["one", "two", "three"]) {
      await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    }

    // A prompt whose text is "until cancelled" streams chunks until the
    // client sends session/cancel (or cancels the request), then ends the
    // turn with stopReason "cancelled", as ACP prescribes. With
    // --ignore-cancel it never stops.
    if (promptText === "until cancelled") {
      cancelled.delete(sessionId);
      for (let i = 0; flags["ignore-cancel"] || (!cancelled.has(sessionId) && !signal.aborted); i++) {
        await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${i}` } });
        await sleep(10);
      }
      log("prompt cancelled", sessionId);
      return { stopReason: "cancelled" };
    }

    // A prompt whose text is "updates only" ends the turn right after its
    // updates, so that nothing orders their handling before the answer
    // except the host's response barrier.
    if (promptText === "updates only") {
      return { stopReason: "end_turn", _meta: { interop: { promptRequestId: requestId } } };
    }

    // Harn's bridge requests, under their real wire names. The SDK sends a
    // request for any method name through AgentContext.request and does not
    // validate the params or the result of a method it does not know.
    const capabilities = await client.request("host/capabilities", { sessionId });
    const shells = await client.request("host/call", {
      sessionId,
      name: "process.list_shells",
      args: {},
    });
    const invocation = await client.request("host/call", {
      sessionId,
      name: "process.shell_invocation",
      args: { command: "printf interop" },
    });
    const errorCode = await errorOf(() => client.request("host/call", { sessionId, name: "process.exec", args: {} }));

    return {
      stopReason: "end_turn",
      _meta: { interop: { capabilities, shells, invocation, errorCode, promptRequestId: requestId } },
    };
  });

// errorOf runs a request that must fail and returns its JSON-RPC error code
// (a RequestError carries it), or a string saying what happened instead.
async function errorOf(call) {
  try {
    const res = await call();
    return `no error: ${JSON.stringify(res)}`;
  } catch (err) {
    return err instanceof acp.RequestError ? err.code : `not a RequestError: ${err}`;
  }
}

// grantedBy is Harn's rule for a permission answer: only a selected "allow"
// grants; anything else, an error included, denies.
const grantedBy = (res) => res?.outcome?.outcome === "selected" && res.outcome.optionId === "allow";

const permissionOptions = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

// askPermission sends session/request_permission and reports the answer.
async function askPermission(client, sessionId, toolCall) {
  try {
    const res = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall,
      options: permissionOptions,
    });
    return { title: toolCall.title, outcome: res.outcome, granted: grantedBy(res), raw: res };
  } catch (err) {
    return { title: toolCall.title, errorCode: err instanceof acp.RequestError ? err.code : String(err), granted: false };
  }
}

// interopTour is the full ACP flow the Go client's interop test drives: every
// session/update kind, three permission round trips, fs/read_text_file of
// the file the prompt links, and "_"-prefixed extension calls both ways.
async function interopTour(params, client, update) {
  const { sessionId } = params;
  for (const u of tour.updates) await update(u);
  for (const u of tour.extensionUpdates) await update(u);

  const permissions = [];
  for (const title of ["allowed", "rejected", "erroring"]) {
    permissions.push(
      await askPermission(client, sessionId, {
        toolCallId: `perm-${title}`,
        title,
        kind: "edit",
        status: "pending",
        rawInput: { path: "/workspace/notes.txt" },
      }),
    );
  }

  const link = params.prompt.find((block) => block.type === "resource_link");
  const file = await client.request(acp.methods.client.fs.readTextFile, {
    sessionId,
    path: fileURLToPath(link.uri),
    line: 2,
    limit: 2,
  });

  const echo = await client.request("_bridgekit/echo", { value: { n: 1, s: "from the agent" } });
  const unknownCode = await errorOf(() => client.request("_bridgekit/unknown", {}));
  await client.notify("_bridgekit/note", { text: "from the agent" });

  return {
    stopReason: "end_turn",
    _meta: { interop: { permissions, file, echo, unknownCode, received } },
  };
}

// harnTour behaves like a Harn runtime serving a prompt, for examples/host:
// it calls every bridge method the host serves and streams ACP and Harn
// updates, then ends the turn with Harn's terminal outcome (--terminal,
// default "natural"; "none" leaves it out). With --report=PATH it writes
// what it got as JSON.
async function harnTour(params, client, update, promptText) {
  const { sessionId } = params;
  const cwd = sessions.get(sessionId)?.cwd ?? process.cwd();
  const report = { prompt: promptText, cwd };
  const attempt = async (name, call) => {
    try {
      report[name] = await call();
    } catch (err) {
      report[name] = { errorCode: err instanceof acp.RequestError ? err.code : String(err), message: err.message };
    }
  };

  await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "Planning the work." } });
  await update({
    sessionUpdate: "plan",
    entries: [
      { content: "Pick a skill", priority: "high", status: "in_progress" },
      { content: "Edit the code", priority: "medium", status: "pending" },
    ],
  });
  await attempt("capabilities", () => client.request("host/capabilities", { sessionId }));
  await attempt("tools", () => client.request("host/tools/list", {}));
  await attempt("skills", () => client.request("skills/list", {}));
  const list = Array.isArray(report.skills) ? report.skills : (report.skills?.skills ?? []);
  const candidates = [];
  for (const ref of list) {
    const skill = await client.request("skills/fetch", { id: ref.id });
    const manifest = skill.manifest ?? skill;
    candidates.push({
      name: skill.name,
      description: skill.description ?? "",
      when_to_use: manifest.when_to_use ?? "",
      paths: manifest.paths ?? [],
    });
  }
  report.candidates = candidates;
  await attempt("match", () =>
    client.request("skill/match", { strategy: "host", prompt: promptText, working_files: ["infra/cluster.tf"], candidates }),
  );
  const top = report.match?.matches?.[0];
  if (top) {
    await update({ sessionUpdate: "skill_activated", _meta: { harn: { skillName: top.name, iteration: 1, reason: top.reason } } });
  }
  await attempt("unknownSkill", () => client.request("skills/fetch", { id: "no-such-skill" }));

  // A host tool through builtin_call (one argument, the arguments object),
  // one the host does not offer, and the bridge's own notifications.
  await attempt("tool", () => client.request("builtin_call", { name: "Read", args: [{ path: "README.md" }] }));
  await attempt("rejectedTool", () => client.request("builtin_call", { name: "rm_rf", args: [{ path: "/" }] }));
  await client.notify("progress", { phase: "worker", message: "spawned reviewer", progress: 1, total: 2 });
  await client.notify("log", { level: "info", message: "tour under way" });
  await client.notify("_harn/agentEvent", { sessionId, kind: "iteration_start", iteration: 1 });
  await client.notify("agent/idle", { iteration: 1, backoff_ms: 100 });

  // Two permission requests: the host's policy allows the first and denies
  // the second.
  const harnToolCall = (id, tool, kind, path) => ({
    toolCallId: id,
    title: tool,
    kind,
    status: "pending",
    locations: [{ path: `${cwd}/${path}` }],
    rawInput: { path },
    _meta: { harn: { toolName: tool } },
  });
  const edit = harnToolCall("edit-1", "edit_file", "edit", "src/main.go");
  await update({ sessionUpdate: "tool_call", ...edit });
  report.permissions = [
    await askPermission(client, sessionId, edit),
    await askPermission(client, sessionId, harnToolCall("delete-1", "delete_file", "delete", "README.md")),
  ];
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId: "edit-1",
    status: report.permissions[0].granted ? "completed" : "failed",
    _meta: { harn: { executor: "host_bridge", durationMs: 7 } },
  });

  await attempt("file", () => client.request(acp.methods.client.fs.readTextFile, { sessionId, path: `${cwd}/README.md`, line: 1, limit: 1 }));
  await attempt("outsideFile", () => client.request(acp.methods.client.fs.readTextFile, { sessionId, path: "/etc/hostname" }));
  await attempt("write", () =>
    client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: `${cwd}/src/generated.txt`, content: "written by the agent\n" }),
  );
  await attempt("deniedWrite", () =>
    client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: `${cwd}/README.md`, content: "overwritten\n" }),
  );

  // A terminal the policy allows, and one it denies (it would create a file).
  await attempt("terminal", async () => {
    const { terminalId } = await client.request(acp.methods.client.terminal.create, {
      sessionId,
      command: "echo",
      args: ["terminal", "works"],
    });
    const exit = await client.request(acp.methods.client.terminal.waitForExit, { sessionId, terminalId });
    const output = await client.request(acp.methods.client.terminal.output, { sessionId, terminalId });
    await client.request(acp.methods.client.terminal.release, { sessionId, terminalId });
    return { terminalId, exit, output };
  });
  await attempt("deniedTerminal", () =>
    client.request(acp.methods.client.terminal.create, { sessionId, command: "touch", args: [`${cwd}/must-not-exist`] }),
  );

  await update({ sessionUpdate: "progress", _meta: { harn: { phase: "narration", message: "almost done", progress: 2, total: 3 } } });
  await update({ sessionUpdate: "log", _meta: { harn: { level: "info", message: "bridge calls finished" } } });
  await update({
    sessionUpdate: "agent_message_chunk",
    content: { type: "text", text: `Used skill ${top?.name ?? "none"}; edit ${report.permissions[0].granted ? "granted" : "denied"}.` },
  });

  if (flags.report) writeFileSync(flags.report, JSON.stringify(report));
  const kind = flags.terminal ?? "natural";
  if (kind === "none") return { stopReason: "end_turn" };
  return { stopReason: "end_turn", _meta: { harn: { terminal: { kind, reason: kind === "natural" ? "done" : "stopped by policy", owner: "agent" } } } };
}

const connection = app.connect(
  acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);

// The host ends the session by closing our stdin; the connection then closes.
connection.closed.then(
  () => {
    log("connection closed");
    process.exit(0);
  },
  (err) => {
    log("connection failed:", err);
    process.exit(1);
  },
);
