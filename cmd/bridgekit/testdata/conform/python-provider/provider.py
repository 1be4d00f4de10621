#!/usr/bin/env python3
"""A tiny agentpm-service approval provider (standard library only), for
bridgekit conform's tests.

    python3 provider.py [--broken shapes|codes|envelope]

It speaks agentpm-service v1 on stdin/stdout: the handshake, then
request_approval, approving checkpoints whose id starts with "review-" and
leaving the others pending. --broken answers wrong on purpose:

  shapes    request_approval's decision is a number, the readiness's ready a string
  codes     an unknown method is refused with "not_found", a bad payload with an integer code
  envelope  responses carry version "1" (a string) and no service member
"""
import json
import sys

ROLE = "approval"
PROTOCOL = "agentpm-service"


def main():
    broken = ""
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--broken" and args[1] in ("shapes", "codes", "envelope"):
        broken = args[1]
    elif args:
        print("usage: provider.py [--broken shapes|codes|envelope]", file=sys.stderr)
        return 2
    ready = False
    out = sys.stdout

    def write(frame):
        if broken == "envelope" and frame.get("kind") in ("response", "initialized"):
            frame["version"] = "1"
            frame.pop("service", None)
        out.write(json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n")
        out.flush()

    def error(fid, code, message):
        frame = {"protocol": PROTOCOL, "version": 1, "kind": "error", "service": ROLE,
                 "error": {"code": code, "message": message, "retryable": False}}
        if fid is not None:
            frame["id"] = fid
        write(frame)

    for raw in sys.stdin.buffer:
        raw = raw.rstrip(b"\r\n")
        if not raw:
            continue
        try:
            frame = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            error(None, "malformed_frame", "not a JSON line: %s" % e)
            continue
        if not isinstance(frame, dict):
            error(None, "malformed_frame", "not an envelope")
            continue
        fid = frame.get("id")
        if not isinstance(fid, str):
            error(None, "malformed_frame", "the id is not a string")
            continue
        if frame.get("protocol") != PROTOCOL or frame.get("version") != 1 or type(frame.get("version")) is not int:
            error(fid, "protocol_error", "not agentpm-service version 1")
            continue
        kind, method, service = frame.get("kind"), frame.get("method"), frame.get("service")
        payload = frame.get("payload")
        if kind not in ("initialize", "request") or not isinstance(method, str):
            error(fid, "malformed_frame", "not a request")
            continue
        if method == "initialize":
            if service != ROLE or not isinstance(payload, dict) or payload.get("role") != ROLE:
                error(fid, "unsupported_capability", "this provider serves the approval role only")
                continue
            if payload.get("protocol_version") != 1:
                error(fid, "protocol_error", "protocol version 1 only")
                continue
            ready = True
            result = {"role": ROLE, "protocol_version": 1, "registry_id": payload.get("registry_id"),
                      "ready": "yes" if broken == "shapes" else True,
                      "capabilities": {"request_approval": True, "cancellation": False}}
            write({"protocol": PROTOCOL, "version": 1, "kind": "initialized", "id": fid, "service": ROLE, "result": result})
            continue
        if not ready:
            error(fid, "protocol_error", "the handshake comes first")
            continue
        if service != ROLE or method != "request_approval":
            error(fid, "not_found" if broken == "codes" else "unsupported_capability", "no method %s for %s" % (method, service))
            continue
        cp = payload.get("checkpoint") if isinstance(payload, dict) else None
        if not isinstance(cp, dict) or not isinstance(cp.get("id"), str):
            error(fid, 400 if broken == "codes" else "invalid_request", "payload.checkpoint must be an object with an id")
            continue
        decision = "approve" if cp["id"].startswith("review-") else "pending"
        if broken == "shapes":
            decision = 7
        write({"protocol": PROTOCOL, "version": 1, "kind": "response", "id": fid, "service": ROLE, "result": {"decision": decision}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
