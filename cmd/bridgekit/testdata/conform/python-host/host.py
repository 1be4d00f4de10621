#!/usr/bin/env python3
"""A small Harn bridge host, standard library only, for bridgekit conform.

It serves the bridge on stdin/stdout, one JSON-RPC message per line:
host/capabilities and host/call for shell discovery (process.*),
host/tools/list (no tools), builtin_call (every tool refused, -32001),
skills/list and skills/fetch (one built-in skill), skill/match (a word
overlap ranking), session/request_permission (always the reject option),
fs/read_text_file and fs/write_text_file (files under --workspace only),
and ignores every notification. Unknown requests are -32601, bad params
-32602, a line that is not JSON -32700 with id null.

--broken MODE answers wrong on purpose, to show what conform reports:
  shapes  host/capabilities, process.list_shells and skills/list answer
          members of the wrong JSON kind
  codes   unknown methods are -32600 and bad params -32603
"""

import argparse
import json
import os
import shutil
import sys

SKILL = {
    "id": "ship",
    "name": "ship",
    "description": "Ship a production release",
    "body": "# Shipping runbook\nTag, build, deploy.\n",
    "manifest": {"when_to_use": "User says ship, release or deploy", "allowed_tools": ["bash"], "paths": ["infra/**"]},
}


class RPCError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Host:
    def __init__(self, workspace, broken):
        self.workspace = os.path.realpath(workspace)
        self.broken = broken
        self.default_shell = None

    def code(self, code):
        if self.broken == "codes":
            return {-32601: -32600, -32602: -32603}.get(code, code)
        return code

    def bad_params(self, why):
        return RPCError(self.code(-32602), "invalid params: " + why)

    # shell discovery

    def shells(self):
        out = []
        for name in ("bash", "sh", "zsh", "dash"):
            path = shutil.which(name)
            if path:
                out.append({"id": name, "label": name, "path": path, "platform": sys.platform,
                            "available": True, "supports_login": True, "supports_interactive": True,
                            "default_args": ["-c"], "login_args": ["-l", "-c"], "source": "host"})
        return out

    def shell(self, shell_id=None):
        shells = self.shells()
        want = shell_id or self.default_shell
        for s in shells:
            if want is None or s["id"] == want:
                return s
        if shell_id:
            raise RPCError(self.code(-32602), "no shell " + shell_id, {"shell_id": shell_id})
        raise RPCError(-32000, "no usable shell")

    def host_call(self, params):
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            raise self.bad_params("name must be a string")
        name, args = params["name"], params.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise self.bad_params("args must be an object")
        if name == "process.list_shells":
            shells = self.shells()
            if self.broken == "shapes":
                return {"shells": "bash", "default_shell_id": 1}
            return {"shells": shells, "default_shell_id": self.shell()["id"]}
        if name == "process.get_default_shell":
            return self.shell()
        if name == "process.set_default_shell":
            sid = args.get("shell_id")
            if not isinstance(sid, str):
                raise self.bad_params("shell_id must be a string")
            s = self.shell(sid)
            self.default_shell = sid
            return s
        if name == "process.shell_invocation":
            command = args.get("command")
            if not isinstance(command, str):
                raise self.bad_params("command must be a string")
            for key in ("login", "interactive"):
                if key in args and not isinstance(args[key], bool):
                    raise self.bad_params(key + " must be a boolean")
            sid = args.get("shell_id")
            if sid is not None and not isinstance(sid, str):
                raise self.bad_params("shell_id must be a string")
            s = self.shell(sid)
            lead = s["login_args"] if args.get("login") else s["default_args"]
            argv = list(lead) + [command]
            return {"program": s["path"], "args": argv, "command_arg_index": len(argv) - 1, "shell": s}
        raise RPCError(self.code(-32601), "host/call: unsupported operation " + name, {"operation": name})

    # files

    def inside(self, path):
        if not isinstance(path, str) or not os.path.isabs(path):
            raise self.bad_params("path must be absolute")
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.workspace]) != self.workspace:
            raise RPCError(-32001, "outside the workspace", {"path": path, "reason": "outside the workspace"})
        return real

    def read(self, params):
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
            raise self.bad_params("sessionId must be a string")
        path = self.inside(params.get("path"))
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise RPCError(-32002, "no such file", {"path": params["path"]})
        except OSError as e:
            raise RPCError(-32000, str(e))
        line, limit = params.get("line"), params.get("limit")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start:start + limit] if limit is not None else lines[start:])
        return {"content": text}

    def write(self, params):
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str) or not isinstance(params.get("content"), str):
            raise self.bad_params("sessionId and content must be strings")
        path = self.inside(params.get("path"))
        tmp = path + ".tmp-host-py"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(params["content"])
        os.replace(tmp, path)
        return {}

    # the rest

    def permission(self, params):
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str) \
                or not isinstance(params.get("toolCall"), dict) or not isinstance(params.get("options"), list):
            raise self.bad_params("sessionId, toolCall and options are required")
        for o in params["options"]:
            if isinstance(o, dict) and str(o.get("kind", "")).startswith("reject"):
                return {"outcome": {"outcome": "selected", "optionId": o.get("optionId")}}
        return {"outcome": {"outcome": "cancelled"}}

    def skill_match(self, params):
        if not isinstance(params, dict) or not isinstance(params.get("prompt"), str) or not isinstance(params.get("candidates"), list):
            raise self.bad_params("prompt and candidates are required")
        words = set(params["prompt"].lower().split())
        matches = []
        for c in params["candidates"]:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise self.bad_params("every candidate needs a name")
            text = " ".join(str(c.get(k, "")) for k in ("name", "description", "when_to_use")).lower().replace("/", " ")
            score = len(words & set(text.split()))
            if score:
                matches.append({"name": c["name"], "score": float(score), "reason": "shared words"})
        matches.sort(key=lambda m: (-m["score"], m["name"]))
        return {"matches": matches}

    def handle(self, method, params):
        if method == "host/capabilities":
            if self.broken == "shapes":
                return {"process": "list_shells"}
            return {"process": ["list_shells", "get_default_shell", "set_default_shell", "shell_invocation"]}
        if method == "host/call":
            return self.host_call(params)
        if method == "host/tools/list":
            return {"tools": []}
        if method == "builtin_call":
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                raise self.bad_params("name must be a string")
            raise RPCError(-32001, "not a tool of this host", {"tool": params["name"], "reason": "no tools"})
        if method == "skills/list":
            if self.broken == "shapes":
                return [{"id": 7, "name": "ship"}]
            return [{k: SKILL[k] for k in ("id", "name", "description")} | {"source": "host"}]
        if method == "skills/fetch":
            if not isinstance(params, dict) or not isinstance(params.get("id"), str):
                raise self.bad_params("id must be a string")
            if params["id"] != SKILL["id"]:
                raise RPCError(self.code(-32602), "no skill " + params["id"])
            return {k: SKILL[k] for k in ("name", "description", "body", "manifest")}
        if method == "skill/match":
            return self.skill_match(params)
        if method == "session/request_permission":
            return self.permission(params)
        if method == "fs/read_text_file":
            return self.read(params)
        if method == "fs/write_text_file":
            return self.write(params)
        raise RPCError(self.code(-32601), "method not found: " + str(method))


def reply(out, msg):
    out.write(json.dumps(msg, separators=(",", ":")) + "\n")
    out.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", default=os.getcwd(), help="the directory fs/* may touch")
    ap.add_argument("--broken", choices=["shapes", "codes"], help="answer wrong on purpose")
    a = ap.parse_args()
    host = Host(a.workspace, a.broken)
    stdin = sys.stdin.buffer
    out = sys.stdout
    for raw in stdin:
        line = raw.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            reply(out, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            continue
        if not isinstance(msg, dict) or ("method" in msg and not isinstance(msg["method"], str)) \
                or ("method" not in msg and "id" not in msg):
            reply(out, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}})
            continue
        if "method" not in msg:
            continue  # a reply: this host never asks anything
        if "id" not in msg:
            continue  # a notification: rendered by real hosts, ignored here
        try:
            result = host.handle(msg["method"], msg.get("params"))
            reply(out, {"jsonrpc": "2.0", "id": msg["id"], "result": result})
        except RPCError as e:
            err = {"code": e.code, "message": e.message}
            if e.data is not None:
                err["data"] = e.data
            reply(out, {"jsonrpc": "2.0", "id": msg["id"], "error": err})
        except Exception as e:  # a bug here must not end the session
            reply(out, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": "internal error: " + str(e)}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
