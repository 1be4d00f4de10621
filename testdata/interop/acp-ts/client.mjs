// An ACP client built with the official TypeScript ACP SDK
// (@agentclientprotocol/sdk 2.4.0), used by Go tests as an independent peer
// that drives a Go agent. Spawned as a child process, it speaks
// newline-delimited JSON-RPC on stdin/stdout with the agent, runs
// initialize -> session/new -> session/prompt("until cancelled"), sends
// session/cancel once it has seen CANCEL_AFTER session/update notifications,
// and writes a JSON report of what happened to the file named by its first
// argument.
//
// stdout carries protocol messages only; every log line goes to stderr.
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const log = (...args) => console.error("[acp-ts client]", ...args);
const reportPath = process.argv[2];
const CANCEL_AFTER = 3;

const report = { updates: [], cancelSentAt: null, stopReason: null, error: null };
let sessionId = null;

const app = acp
  .client({ name: "bridgekit-interop-client" })
  .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
    const u = params.update;
    report.updates.push(`${u.sessionUpdate}:${u.content?.type === "text" ? u.content.text : ""}`);
    if (report.updates.length === CANCEL_AFTER && report.cancelSentAt === null) {
      report.cancelSentAt = Date.now();
      log("sending session/cancel", sessionId);
      await agent.notify(acp.methods.agent.session.cancel, { sessionId });
    }
  });

try {
  await app.connectWith(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)), async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    report.protocolVersion = init.protocolVersion;
    report.agentInfo = init.agentInfo ?? null;
    const session = await agent.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    sessionId = session.sessionId;
    report.sessionId = sessionId;
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
writeFileSync(reportPath, JSON.stringify(report));
process.exit(report.error ? 1 : 0);
