package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/inspect"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
)

// inspectOptions are the inspector's: initialize summarized by probe's
// own code.
func inspectOptions(loopbackOnly bool) inspect.Options {
	return inspect.Options{LoopbackOnly: loopbackOnly, Summarize: summarizeInitialize}
}

// summarizeInitialize describes an ACP (or Harn) session's initialize as
// `bridgekit probe` prints it: the agent, its protocol version,
// capabilities, auth methods, and the modes, models and config options of
// the first session opened, after what the client asked (its protocol
// version, its capabilities).
func summarizeInitialize(family frames.Family, req, reply *tracelog.Record, sessions []*tracelog.Record) string {
	if family != frames.ACP && family != frames.Harn {
		return ""
	}
	r := &probeResult{}
	var q struct {
		Params struct {
			ProtocolVersion json.RawMessage            `json:"protocolVersion"`
			ClientInfo      json.RawMessage            `json:"clientInfo"`
			Capabilities    map[string]json.RawMessage `json:"clientCapabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(req.Line(), &q) == nil {
		if q.Params.ClientInfo != nil {
			r.Before = append(r.Before, [2]string{"client", agentText(q.Params.ClientInfo)})
		}
		if q.Params.ProtocolVersion != nil {
			r.Before = append(r.Before, [2]string{"protocol asked", string(q.Params.ProtocolVersion)})
		}
		delete(q.Params.Capabilities, "_meta")
		for i, c := range flattenCapabilities(q.Params.Capabilities) {
			label := ""
			if i == 0 {
				label = "client capabilities"
			}
			r.Before = append(r.Before, [2]string{label, c.Path + ": " + c.Value})
		}
	}
	result, errText := replyOf(reply)
	switch {
	case reply == nil:
		r.Error = fmt.Sprintf("initialize (#%d) was never answered", req.Seq)
	case errText != "":
		r.Error = "initialize failed: " + errText
	default:
		r.OK = true
		r.readInitialize(result)
	}
	if r.OK && len(sessions) > 0 {
		s := &probeSession{Where: fmt.Sprintf("session/new answered (#%d)", sessions[0].Seq)}
		if res, e := replyOf(sessions[0]); e != "" {
			s.Error = e
		} else {
			s.read(res)
		}
		r.Session = s
	}
	var b bytes.Buffer
	printProbe(&b, r)
	return strings.TrimRight(b.String(), "\n")
}

// replyOf returns a reply's result, or its error as text.
func replyOf(r *tracelog.Record) (json.RawMessage, string) {
	if r == nil {
		return nil, ""
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Line(), &m); err != nil {
		return nil, "not JSON: " + err.Error()
	}
	if m.Error != nil {
		return nil, fmt.Sprintf("%d %s", m.Error.Code, m.Error.Message)
	}
	return m.Result, ""
}
