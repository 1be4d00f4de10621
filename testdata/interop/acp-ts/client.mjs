// An ACP client built with the official TypeScript ACP SDK
// (@agentclientprotocol/sdk 2.4.0), used by Go tests as an independent peer
// that drives a Go agent. Spawned as a child process, it speaks
// newline-delimited JSON-RPC on stdin/stdout with the agent and writes a JSON
// report of what happened to the file named by its first argument.
//
//	node client.mjs REPORT          initialize -> session/new -> session/prompt("until cancelled"),
//	                                then session/cancel after CANCEL_AFTER session/update notifications
//	node client.mjs REPORT tour FILE  first the interop tour (see README.md), with FILE as the
//	                                file the prompt links, then the same cancellation
//
// stdout carries protocol messages only; every log line goes to stderr.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const log = (...args) => console.error("[acp-ts client]", ...args);
const identity = (params) => params;
const [reportPath, scenario = "cancel", linkedFile] = process.argv.slice(2);
const CANCEL_AFTER = 3;

const report = { updates: [], cancelSentAt: null, stopReason: null, error: null };
let sessionId = null;
// phase is "tour" while the tour's prompt runs, then "cancel".
let phase = scenario === "tour" ? "tour" : "cancel";
const tour = {
  updates: [], // every session/update of the tour's prompt, as the SDK parsed it
  permissionRequests: [],
  fsRequests: [],
  echoRequests: [],
  notes: [],
};

const errorCode = (err) => (err instanceof acp.RequestError ? err.code : `not a RequestError: ${err}`);

const app = acp
  .client({ name: "bridgekit-interop-client" })
  .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
    const u = params.update;
    if (phase === "tour") {
      tour.updates.push(u);
      return;
    }
    report.updates.push(`${u.sessionUpdate}:${u.content?.type === "text" ? u.content.text : ""}`);
    if (report.updates.length === CANCEL_AFTER && report.cancelSentAt === null) {
      report.cancelSentAt = Date.now();
      log("sending session/cancel", sessionId);
      await agent.notify(acp.methods.agent.session.cancel, { sessionId });
    }
  })
  // Permission: allow "allowed", reject "rejected", and fail on "erroring"
  // (the SDK answers a thrown error with a JSON-RPC error).
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    tour.permissionRequests.push(params);
    const title = params.toolCall.title;
    if (title === "erroring") throw new Error("the permission prompt crashed");
    const kind = title === "allowed" ? "allow_once" : "reject_once";
    const option = params.options.find((o) => o.kind === kind);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    tour.fsRequests.push(params);
    let lines = readFileSync(params.path, "utf8").split(/(?<=\n)/);
    const start = (params.line ?? 1) - 1;
    lines = lines.slice(start, params.limit == null ? undefined : start + params.limit);
    return { content: lines.join("") };
  })
  .onRequest("_bridgekit/echo", identity, ({ params }) => {
    tour.echoRequests.push(params);
    return { echo: params };
  })
  .onNotification("_bridgekit/note", identity, ({ params }) => {
    tour.notes.push(params);
  });

try {
  await app.connectWith(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)), async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
    });
    report.protocolVersion = init.protocolVersion;
    report.agentInfo = init.agentInfo ?? null;
    const session = await agent.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    sessionId = session.sessionId;
    report.sessionId = sessionId;

    if (scenario === "tour") {
      // "_"-prefixed extension methods, a cancelled one among them.
      await agent.notify("_bridgekit/note", { text: "from the ts client" });
      tour.ping = await agent.request("_bridgekit/ping", { value: "from ts" });
      try {
        await agent.request("_bridgekit/unknown", {});
        tour.unknownCode = "no error";
      } catch (err) {
        tour.unknownCode = errorCode(err);
      }
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 100);
      try {
        tour.slow = await agent.request("_bridgekit/slow", { tag: "slow-1" }, { cancellationSignal: abort.signal });
      } catch (err) {
        tour.slowCode = errorCode(err);
      }

      const res = await agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [
          { type: "text", text: "interop tour" },
          { type: "resource_link", uri: pathToFileURL(linkedFile).href, name: "notes.txt" },
        ],
      });
      tour.stopReason = res.stopReason;
      tour.meta = res._meta ?? null;
      report.tour = tour;
      phase = "cancel";
    }

    const res = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "until cancelled" }],
    });
    report.stopReason = res.stopReason;
    report.promptMeta = res._meta ?? null;
  });
} catch (err) {
  report.error = String(err?.stack ?? err);
  log("failed:", err);
}
report.tour = report.tour ?? (scenario === "tour" ? tour : undefined);
writeFileSync(reportPath, JSON.stringify(report));
process.exit(report.error ? 1 : 0);
