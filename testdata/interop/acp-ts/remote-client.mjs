// An ACP client on the official TypeScript ACP SDK's own network transports (@agentclientprotocol/sdk
// 2.4.0, experimental/http-client and experimental/ws-client, with the `ws` package's WebSocket), for Go
// tests of bridgekit's remote servers. Written for bridgekit.
//
//	node remote-client.mjs URL REPORT [scenario]
//
// URL is http://… (Streamable HTTP) or ws://… (WebSocket). The "turn" scenario (the default):
// initialize, session/new, session/prompt "20 updates" answering the permission request with the allow
// option, then session/prompt "until cancelled" with session/cancel after 3 updates. "bench CALLS BURST":
// CALLS round trips of the extension request _bench/echo, one after another and then from 16 concurrent
// callers, then a prompt "burst BURST"; the report gives the times, and the client's CPU time in the burst.
// The report (JSON) goes to REPORT; logs to stderr.
import { writeFileSync } from "node:fs";
import WebSocket from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const log = (...args) => console.error("[acp-ts remote client]", ...args);
const identity = (params) => params;
const [url, reportPath, scenario = "turn", calls = "1000", burst = "1000"] = process.argv.slice(2);
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : {};
const stream = url.startsWith("ws")
  ? createWebSocketStream(url, { WebSocket, headers })
  : createHttpStream(url, { headers });

const report = { turn: [], permission: null, stopReason: null, cancelled: [], cancelStopReason: null, error: null };
let phase = "turn";
let sessionId = null;
let sentCancel = false;
let updates = 0;

const app = acp
  .client({ name: "bridgekit-remote-interop-client" })
  .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
    const text = params.update.content?.type === "text" ? params.update.content.text : "";
    updates++;
    if (phase === "turn") report.turn.push(text);
    else if (phase === "cancel") {
      report.cancelled.push(text);
      if (report.cancelled.length === 3 && !sentCancel) {
        sentCancel = true;
        await agent.notify(acp.methods.agent.session.cancel, { sessionId });
      }
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    report.permission = params.toolCall.title;
    const option = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

try {
  await app.connectWith(stream, async (agent) => {
    await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    const session = await agent.request(acp.methods.agent.session.new, { cwd: "/", mcpServers: [] });
    sessionId = session.sessionId;
    if (scenario === "bench") {
      const n = Number(calls);
      phase = "bench";
      let t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) await agent.request("_bench/echo", { i });
      report.roundTripNs = n > 0 ? Number(process.hrtime.bigint() - t0) / n : 0;
      // The same number of round trips from CALLERS concurrent callers (env BENCH_CALLERS, default 16):
      // the time per round trip is then the inverse of the throughput.
      const callers = Number(process.env.BENCH_CALLERS ?? "16");
      t0 = process.hrtime.bigint();
      await Promise.all(Array.from({ length: callers }, async (_, c) => {
        for (let i = c; i < n; i += callers) await agent.request("_bench/echo", { i });
      }));
      report.concurrentNs = n > 0 ? Number(process.hrtime.bigint() - t0) / n : 0;
      updates = 0;
      t0 = process.hrtime.bigint();
      const cpu0 = process.cpuUsage();
      const res = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: `burst ${burst}` }] });
      report.burstNs = Number(process.hrtime.bigint() - t0);
      // This client's own CPU time in the burst (user and system, microseconds): what bounds its rate
      // whatever the server.
      const cpu = process.cpuUsage(cpu0);
      report.burstCpuUs = cpu.user + cpu.system;
      report.burstUpdates = updates;
      report.stopReason = res.stopReason;
      return;
    }
    const res = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "20 updates" }] });
    report.stopReason = res.stopReason;
    phase = "cancel";
    const res2 = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "until cancelled" }] });
    report.cancelStopReason = res2.stopReason;
  });
} catch (err) {
  report.error = String(err?.stack ?? err);
  log("failed:", err);
}
writeFileSync(reportPath, JSON.stringify(report));
process.exit(report.error ? 1 : 0);
