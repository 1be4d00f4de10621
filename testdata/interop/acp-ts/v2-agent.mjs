// An ACP agent that serves the draft ACP v2 and v1 on one stdio stream
// through the official TypeScript SDK 2.4.0's router (agentProtocolRouter,
// experimental/v2), used by Go tests as an independent peer of bridgekit's
// clients/acpnegotiate.
//
//	node v2-agent.mjs [--route=v1v2|v2|v1] [--report=PATH]
//
// --route picks the versions the router serves (default v1v2). Each version's
// agent answers session/new, and a session/prompt with a whole turn:
//   v2: the prompt is acknowledged with its message id, then state_update
//       running, one agent_message_chunk ("hello from the ts v2 agent") and
//       state_update idle end_turn;
//   v1: one agent_message_chunk ("hello from the ts v1 agent"), then
//       stopReason end_turn.
// --report=PATH writes, after each initialize, the params each version's agent
// got (after the router's rewriting) as {"v1": [...], "v2": [...]}.
//
// stdout carries protocol messages only; every log line goes to stderr.
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp1 from "@agentclientprotocol/sdk";
import * as acp2 from "@agentclientprotocol/sdk/experimental/v2";

const log = (...args) => console.error("[acp-ts v2-agent]", ...args);
const flags = {};
for (const arg of process.argv.slice(2)) {
  const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
  if (!m) {
    log("unknown argument", arg);
    process.exit(2);
  }
  flags[m[1]] = m[2] ?? true;
}
const route = flags.route ?? "v1v2";
const got = { v1: [], v2: [] };
const report = () => {
  if (flags.report) writeFileSync(flags.report, JSON.stringify(got));
};

let nextSession = 0;

const v2 = acp2
  .agent({ name: "bridgekit-interop-v2-agent" })
  .onRequest(acp2.methods.agent.initialize, ({ params }) => {
    log("v2 initialize", JSON.stringify(params));
    got.v2.push(params);
    report();
    return {
      protocolVersion: acp2.PROTOCOL_VERSION,
      info: { name: "ts-v2-agent", version: "2.4.0" },
      capabilities: {},
    };
  })
  .onRequest(acp2.methods.agent.session.new, () => ({ sessionId: `v2-session-${nextSession++}` }))
  .onRequest(acp2.methods.agent.session.prompt, ({ params, client }) => {
    const { sessionId } = params;
    const update = (u) => client.notify(acp2.methods.client.session.update, { sessionId, update: u });
    // The prompt is acknowledged at once; the turn runs after the answer.
    setImmediate(async () => {
      try {
        await update({ sessionUpdate: "state_update", state: "running" });
        await update({
          sessionUpdate: "agent_message_chunk",
          messageId: "ts-agent-msg-1",
          content: { type: "text", text: "hello from the ts v2 agent" },
        });
        await update({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
      } catch (err) {
        log("turn failed:", err);
      }
    });
    return { messageId: "ts-user-msg-1" };
  });

const v1 = acp1
  .agent({ name: "bridgekit-interop-v1-agent" })
  .onRequest(acp1.methods.agent.initialize, ({ params }) => {
    log("v1 initialize", JSON.stringify(params));
    got.v1.push(params);
    report();
    return { protocolVersion: 1, agentCapabilities: {}, authMethods: [], agentInfo: { name: "ts-v1-agent", version: "2.4.0" } };
  })
  .onRequest(acp1.methods.agent.session.new, () => ({ sessionId: `v1-session-${nextSession++}` }))
  .onRequest(acp1.methods.agent.session.prompt, async ({ params, client }) => {
    await client.notify(acp1.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hello from the ts v1 agent" } },
    });
    return { stopReason: "end_turn" };
  });

const router = acp2.agentProtocolRouter();
if (route.includes("v1")) router.withV1(v1);
if (route.includes("v2")) router.withV2(v2);

const connection = router.connect(acp2.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
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
