// A draft ACP v2 client built with the official TypeScript SDK 2.4.0
// (experimental/v2), used by Go tests as an independent peer of bridgekit's
// servers/acprouter. It speaks NDJSON on stdin/stdout and writes a JSON report
// to the file named by its first argument.
//
//	node v2-client.mjs REPORT
//
// initialize (protocolVersion 2) -> session/new -> session/prompt("hello"),
// then waits for the idle state_update that ends the turn; the report holds
// the agent's initialize answer, the prompt's message id and every
// session/update it got.
//
// stdout carries protocol messages only; every log line goes to stderr.
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const log = (...args) => console.error("[acp-ts v2-client]", ...args);
const [reportPath] = process.argv.slice(2);
const report = { init: null, messageId: null, updates: [], error: null };

let idle;
const idleSeen = new Promise((resolve) => {
  idle = resolve;
});

const app = acp.client({ name: "bridgekit-interop-v2-client" }).onNotification(acp.methods.client.session.update, ({ params }) => {
  report.updates.push(params.update);
  if (params.update.sessionUpdate === "state_update" && params.update.state === "idle") idle(params.update.stopReason);
});

try {
  await app.connectWith(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)), async (agent) => {
    report.init = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "ts-v2-client", version: "2.4.0" },
      capabilities: {},
    });
    const session = await agent.request(acp.methods.agent.session.new, { cwd: process.cwd() });
    report.sessionId = session.sessionId;
    const res = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    report.messageId = res.messageId;
    report.stopReason = await idleSeen;
  });
} catch (err) {
  report.error = String(err?.stack ?? err);
  log("failed:", err);
}
writeFileSync(reportPath, JSON.stringify(report));
process.exit(report.error ? 1 : 0);
