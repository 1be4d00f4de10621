// An ACP agent built with the official TypeScript ACP SDK
// (@agentclientprotocol/sdk 2.4.0), used by servers/host/interop_test.go as an
// independent peer. Spawned as a child process, it speaks newline-delimited
// JSON-RPC on stdin/stdout and behaves like Harn's runtime while it handles
// session/prompt: it streams session/update notifications, then calls its
// host (the ACP client) with Harn's bridge requests, and finally answers the
// prompt with what it received under _meta.interop.
//
// stdout carries protocol messages only; every log line goes to stderr.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const log = (...args) => console.error("[acp-ts agent]", ...args);

let nextSession = 0;
// Sessions whose prompt turn the client cancelled with session/cancel.
const cancelled = new Set();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const app = acp
  .agent({ name: "bridgekit-interop-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    log("initialize, client protocolVersion", params.protocolVersion);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {},
      authMethods: [],
      agentInfo: { name: "bridgekit-interop-agent", version: "0.0.0" },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `interop-${nextSession++}`;
    log("session/new", sessionId, "cwd", params.cwd);
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    log("session/cancel", params.sessionId);
    cancelled.add(params.sessionId);
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, requestId, signal }) => {
    const { sessionId } = params;
    log("session/prompt", sessionId, "id", requestId);

    // Progress first, as Harn streams its output before it finishes a turn.
    for (const text of ["one", "two", "three"]) {
      await client.notify(acp.methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
      });
    }

    // A prompt whose text is "until cancelled" streams chunks until the
    // client sends session/cancel (or cancels the request), then ends the
    // turn with stopReason "cancelled", as ACP prescribes.
    const promptText = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("");
    if (promptText === "until cancelled") {
      cancelled.delete(sessionId);
      for (let i = 0; !cancelled.has(sessionId) && !signal.aborted; i++) {
        await client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${i}` } },
        });
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
    let errorCode = null;
    try {
      await client.request("host/call", { sessionId, name: "process.exec", args: {} });
      log("process.exec unexpectedly succeeded");
    } catch (err) {
      // A JSON-RPC error response rejects with acp.RequestError carrying its code.
      errorCode = err instanceof acp.RequestError ? err.code : `not a RequestError: ${err}`;
    }

    return {
      stopReason: "end_turn",
      _meta: { interop: { capabilities, shells, invocation, errorCode, promptRequestId: requestId } },
    };
  });

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
