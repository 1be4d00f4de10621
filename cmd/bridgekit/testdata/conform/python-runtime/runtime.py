#!/usr/bin/env python3
"""A small Harn runtime (the VM side of Harn's stdio bridge) for bridgekit's
conform tests, standard library only.

It speaks JSON-RPC 2.0, one object per line, on stdin/stdout, as the ACP
agent of a Harn host:

- initialize advertises Harn's extension contract (agentCapabilities._meta.harn)
  and asks the host for host/capabilities first, as a Harn runtime does;
- a prompt "read PATH" streams a progress extension update, calls
  host/call process.list_shells when the host advertised it, reports a
  tool call (with Harn's fields under _meta.harn), asks
  session/request_permission, and when allowed reads PATH and writes
  PATH.summary through the host (fs/*); rejected, it reports the tool call
  failed;
- a prompt "wait" streams a tick every 50ms until session/cancel, then ends
  with stopReason cancelled;
- every prompt result carries _meta.harn.terminal, as advertised.

--broken variants makes it send a session/update variant it did not
advertise and a tool call with a Harn field at the update's root, where
Harn's contract has it under _meta.harn. --broken client makes it a bad
ACP agent: it reads a file outside the session's cwd, and ends a cancelled
turn with end_turn, late.
"""

import json
import os
import sys
import threading
import time

BROKEN_MODE = sys.argv[sys.argv.index("--broken") + 1] if "--broken" in sys.argv[:-1] else ""
BROKEN = BROKEN_MODE == "variants"
BAD_CLIENT = BROKEN_MODE == "client"

out_lock = threading.Lock()
pending = {}  # id of a request to the host -> [event, reply]
pending_lock = threading.Lock()
next_id = [0]
sessions = {}
cancelled = {}
host_caps = {}


def write(msg):
    line = json.dumps(msg, separators=(",", ":"))
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    write(msg)


def call(method, params, timeout=10):
    with pending_lock:
        next_id[0] += 1
        id_ = "rt-%d" % next_id[0]
        slot = [threading.Event(), None]
        pending[id_] = slot
    write({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
    if not slot[0].wait(timeout):
        raise RuntimeError("no answer to " + method)
    return slot[1]


def update(session, upd):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": upd}})


def say(session, text):
    update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def terminal_result(stop, kind, reason):
    return {"stopReason": stop, "_meta": {"harn": {"terminal": {"kind": kind, "reason": reason, "owner": "agent"}}}}


def initialize(params):
    caps = call("host/capabilities", {})
    if "result" in caps and isinstance(caps["result"], dict):
        host_caps.clear()
        host_caps.update(caps["result"])
    fs = (params.get("clientCapabilities") or {}).get("fs") or {}
    sessions["_fs"] = fs
    return {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": False,
            "_meta": {"harn": {
                "schemaCompatibility": "agentclientprotocol/agent-client-protocol schema v0.12.2",
                "sessionUpdateExtensions": ["progress"],
                "toolLifecycleExtensionFields": ["executor"],
                "promptResultExtensionFields": ["terminal"],
                "hostCapabilityOperations": {"process": ["list_shells"]},
            }},
        },
        "authMethods": [],
        "agentInfo": {"name": "conform-python-runtime", "version": "1"},
    }


def prompt(id_, params):
    session = params.get("sessionId")
    if session not in sessions:
        return reply(id_, error={"code": -32602, "message": "unknown session"})
    blocks = params.get("prompt")
    if not isinstance(blocks, list):
        return reply(id_, error={"code": -32602, "message": "prompt must be a list of content blocks"})
    text = " ".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text").strip()
    verb, _, arg = text.partition(" ")
    cancelled[session] = False
    if verb == "wait":
        i = 0
        while not cancelled.get(session):
            say(session, "tick %d " % i)
            i += 1
            time.sleep(0.05)
        if BAD_CLIENT:
            time.sleep(0.3)
            return reply(id_, terminal_result("end_turn", "natural", "ignored the cancel"))
        return reply(id_, terminal_result("cancelled", "cancelled", "the host cancelled"))
    if verb != "read" or not arg:
        for w in ("You said: " + text).split():
            say(session, w + " ")
        return reply(id_, terminal_result("end_turn", "natural", "answered"))
    path = arg.strip()
    update(session, {"sessionUpdate": "progress", "_meta": {"harn": {"phase": "read", "message": "reading", "progress": 0, "total": 2}}})
    if "list_shells" in (host_caps.get("process") or []):
        call("host/call", {"name": "process.list_shells", "args": {}})
    harn_meta = {"_meta": {"harn": {"executor": "harn_builtin"}}}
    call_update = {"sessionUpdate": "tool_call", "toolCallId": "read-1", "title": "read " + path, "kind": "read", "status": "pending"}
    call_update.update(harn_meta)
    update(session, call_update)
    if BROKEN:
        update(session, {"sessionUpdate": "conform_unadvertised_variant", "_meta": {"harn": {}}})
        update(session, {"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "executor": "harn_builtin"})
    answer = call("session/request_permission", {
        "sessionId": session,
        "toolCall": {"toolCallId": "read-1", "title": "read " + path, "kind": "read"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}],
    })
    outcome = ((answer.get("result") or {}).get("outcome") or {})
    if outcome.get("outcome") != "selected" or outcome.get("optionId") != "allow":
        update(session, {"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": "failed"})
        say(session, "Permission denied. ")
        return reply(id_, terminal_result("end_turn", "natural", "denied"))
    fs = sessions.get("_fs") or {}
    status = "failed"
    if BAD_CLIENT:
        call("fs/read_text_file", {"sessionId": session, "path": "/etc/hostname"})
    if fs.get("readTextFile"):
        got = call("fs/read_text_file", {"sessionId": session, "path": path, "limit": 1})
        first = ((got.get("result") or {}).get("content") or "").split("\n")[0]
        say(session, "The first line is: " + first + " ")
        status = "completed"
        if fs.get("writeTextFile"):
            call("fs/write_text_file", {"sessionId": session, "path": path + ".summary", "content": first + "\n"})
    update(session, {"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": status})
    reply(id_, terminal_result("end_turn", "natural", "answered"))


def handle(msg):
    method, id_, params = msg.get("method"), msg.get("id"), msg.get("params")
    if not isinstance(params, dict):
        params = {}
    if method == "initialize":
        return reply(id_, initialize(params))
    if method == "session/new":
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            return reply(id_, error={"code": -32602, "message": "cwd must be an absolute path"})
        sid = "py-session-%d" % len(sessions)
        sessions[sid] = cwd
        return reply(id_, {"sessionId": sid})
    if method == "session/prompt":
        return prompt(id_, msg.get("params"))
    if method == "session/cancel":
        cancelled[params.get("sessionId")] = True
        return None
    if id_ is not None:
        reply(id_, error={"code": -32601, "message": "method not found: %s" % method})


def main():
    threads = []
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            # --broken drop-bad-json drops the line, as agents on the
            # TypeScript ACP SDK do (allowed); --broken bad-json-no-id
            # answers without an id member and --broken bad-json-code with
            # the wrong code (both wrong).
            if BROKEN_MODE == "drop-bad-json":
                continue
            if BROKEN_MODE == "bad-json-no-id":
                write({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}})
                continue
            code = -32600 if BROKEN_MODE == "bad-json-code" else -32700
            reply(None, error={"code": code, "message": "parse error"})
            continue
        if not isinstance(msg, dict):
            reply(None, error={"code": -32600, "message": "invalid request"})
            continue
        if "method" not in msg:
            id_ = msg.get("id")
            with pending_lock:
                slot = pending.pop(id_, None) if isinstance(id_, str) else None
            if slot:
                slot[1] = msg
                slot[0].set()
            continue
        if not isinstance(msg.get("method"), str):
            reply(None, error={"code": -32600, "message": "invalid request"})
            continue
        th = threading.Thread(target=handle, args=(msg,), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(5)


if __name__ == "__main__":
    main()
