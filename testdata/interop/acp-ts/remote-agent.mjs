// An ACP agent served across the network by the official TypeScript ACP SDK's own transports
// (@agentclientprotocol/sdk 2.4.0, experimental/server and experimental/node, with the `ws` package for
// WebSocket upgrades), for Go tests of bridgekit's remote clients. Written for bridgekit.
//
//	node remote-agent.mjs [--bench]
//
// It listens on 127.0.0.1 (an ephemeral port) at /acp, both Streamable HTTP and WebSocket, and prints
// "listening PORT" on stdout once it does. A prompt "N updates" streams N agent_message_chunk updates
// ("chunk 0", "chunk 1", ...), asking permission (session/request_permission) after half of them, and ends
// the turn end_turn if an allow option was chosen, else refusal; "until cancelled" streams chunks until
// session/cancel, then ends cancelled; "burst N" sends N updates without waiting and ends end_turn. The
// extension request "_bench/echo" answers its params. Logs go to stderr.
import http from "node:http";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";

const log = (...args) => console.error("[acp-ts remote agent]", ...args);
const identity = (params) => params;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function makeAgent() {
  let nextSession = 1;
  const cancelled = new Set();
  return acp
    .agent({ name: "bridgekit-remote-interop-agent" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      authMethods: [],
      agentInfo: { name: "bridgekit-remote-interop-agent", version: "0.0.0" },
    }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `remote-${nextSession++}` }))
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      cancelled.add(params.sessionId);
    })
    .onRequest("_bench/echo", identity, ({ params }) => params)
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
      const { sessionId } = params;
      const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
      const chunk = (i) =>
        client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${i}` } },
        });
      let m = /^burst (\d+)$/.exec(text);
      if (m) {
        const n = Number(m[1]);
        const sends = [];
        for (let i = 0; i < n; i++) sends.push(chunk(i));
        await Promise.all(sends);
        return { stopReason: "end_turn" };
      }
      if (text === "until cancelled") {
        cancelled.delete(sessionId);
        for (let i = 0; !cancelled.has(sessionId) && !signal.aborted; i++) {
          await chunk(i);
          await sleep(5);
        }
        return { stopReason: "cancelled" };
      }
      m = /^(\d+) updates$/.exec(text);
      const n = m ? Number(m[1]) : 3;
      for (let i = 0; i < n; i++) {
        if (i === Math.floor(n / 2)) {
          const res = await client.request(acp.methods.client.session.requestPermission, {
            sessionId,
            toolCall: { toolCallId: "call_1", title: "write" },
            options: [
              { optionId: "ok", name: "Allow", kind: "allow_once" },
              { optionId: "no", name: "Reject", kind: "reject_once" },
            ],
          });
          if (res.outcome.outcome !== "selected" || res.outcome.optionId !== "ok") return { stopReason: "refusal" };
        }
        await chunk(i);
      }
      return { stopReason: "end_turn" };
    });
}

const server = new AcpServer({ createAgent: makeAgent });
const wss = new WebSocketServer({ noServer: true });
const onRequest = createNodeHttpHandler(server);
const onUpgrade = createNodeWebSocketUpgradeHandler(server, wss);
const httpServer = http.createServer((req, res) => {
  if (!req.url.startsWith("/acp")) {
    res.writeHead(404).end();
    return;
  }
  onRequest(req, res);
});
httpServer.on("upgrade", (req, socket, head) => {
  if (!req.url.startsWith("/acp")) {
    socket.destroy();
    return;
  }
  onUpgrade(req, socket, head);
});
httpServer.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${httpServer.address().port}\n`);
});
// The Go test ends the server by closing our stdin.
process.stdin.resume();
process.stdin.on("end", async () => {
  log("stdin closed; stopping");
  await server.close();
  httpServer.close();
  process.exit(0);
});
