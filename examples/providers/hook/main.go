// Command hook is an AgentPM hook provider: a configured `type: "process"`
// hook implementation that speaks agentpm-service v1 on stdin and stdout and
// decides every hook invocation by a policy file (package
// internal/hookpolicy): reject, with the matching rule's reason, or continue,
// with the typed patch the rule asks for (redactions, removed tool
// candidates, a capped top_k or limit, context sections, model guidance).
//
//	hook -policy FILE [-v]
//
// It serves all eight hook ids, both as methods named after the hook id
// (what the Harness sends) and through invoke (the seed's spelling); the
// handshake advertises them. A policy that fails to compile stops the
// provider before it serves anything. Input that does not fit a hook's
// shape is answered with an invalid_request error frame. Each decision is
// logged at info level (-v) with the rule that took it. Diagnostics go to
// stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/examples/providers/internal/cli"
	"github.com/bridgekit/bridgekit/examples/providers/internal/hookpolicy"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/service"
)

func main() {
	policy := flag.String("policy", "", "policy file (JSON; see internal/hookpolicy)")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Parse()
	log := cli.Logger(*verbose)
	if *policy == "" {
		os.Exit(cli.Fatal("hook", errors.New("-policy is required")))
	}
	engine, err := hookpolicy.Load(*policy)
	if err != nil {
		os.Exit(cli.Fatal("hook", err))
	}
	srv, err := service.New(agentpmservice.ServiceRoleHook, handlers(engine, log), &service.Options{Conn: rpc.Options{Logger: log}})
	if err != nil {
		os.Exit(cli.Fatal("hook", err))
	}
	os.Exit(cli.Serve("hook", srv, log, 5*time.Second, nil))
}

// handlers serves every hook id with engine.
func handlers(e *hookpolicy.Engine, log *slog.Logger) *agentpmservice.ServiceHandlers {
	return &agentpmservice.ServiceHandlers{
		BeforeModelRequest: decide[agentpmservice.BeforeModelRequestHook, agentpmservice.BeforeModelRequestDecision](e, log, hookpolicy.BeforeModelRequest),
		BeforeToolSelection: decide[agentpmservice.BeforeToolSelectionHook, agentpmservice.BeforeToolSelectionDecision](e, log,
			hookpolicy.BeforeToolSelection),
		BeforeToolCall: decide[agentpmservice.BeforeToolCallHook, agentpmservice.BeforeToolCallDecision](e, log, hookpolicy.BeforeToolCall),
		BeforeKnowledgeRequest: decide[agentpmservice.BeforeKnowledgeRequestHook, agentpmservice.BeforeKnowledgeRequestDecision](e, log,
			hookpolicy.BeforeKnowledgeRequest),
		AfterKnowledgeRetrieval: decide[agentpmservice.AfterKnowledgeRetrievalHook, agentpmservice.AfterKnowledgeRetrievalDecision](e, log,
			hookpolicy.AfterKnowledgeRetrieval),
		BeforeMemoryRead:  decide[agentpmservice.BeforeMemoryReadHook, agentpmservice.BeforeMemoryReadDecision](e, log, hookpolicy.BeforeMemoryRead),
		BeforeMemoryWrite: decide[agentpmservice.BeforeMemoryWriteHook, agentpmservice.BeforeMemoryWriteDecision](e, log, hookpolicy.BeforeMemoryWrite),
		BeforeMemoryOperation: decide[agentpmservice.BeforeMemoryOperationHook, agentpmservice.BeforeMemoryOperationDecision](e, log,
			hookpolicy.BeforeMemoryOperation),
	}
}

// decide is the handler of one hook id: it evaluates the payload's input
// against the policy and returns the decision as the hook's typed result.
func decide[P, D any](e *hookpolicy.Engine, log *slog.Logger, hook hookpolicy.HookID) func(context.Context, *P) (*D, error) {
	return func(ctx context.Context, p *P) (*D, error) {
		payload, err := json.Marshal(p, wire.Fidelity)
		if err != nil {
			return nil, rpc.InvalidParams(err)
		}
		dec, err := e.Evaluate(hook, rpc.Member(payload, "input"))
		if err != nil {
			return nil, rpc.InvalidParams(err)
		}
		log.Info("hook decided", "hook", hook, "decision", dec.Action, "reason", dec.Reason.Code, "rule", dec.Reason.RuleID, "message", dec.Reason.Message)
		raw, err := dec.Result()
		if err != nil {
			return nil, err
		}
		var d D
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("hook %s: the policy's decision %s does not fit the hook's result: %w", hook, rpc.Truncate(string(raw), rpc.MaxEcho), err)
		}
		return &d, ctx.Err()
	}
}
