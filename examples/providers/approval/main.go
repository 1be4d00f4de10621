// Command approval is an AgentPM approval controller: the `type: "process"`
// implementation of the approval role (registry id controller) that speaks
// agentpm-service v1 on stdin and stdout and decides request_approval by
// rules given as flags.
//
//	approval [-approve GLOB,...] [-deny GLOB,...] [-default pending] [-v]
//
// A checkpoint is denied when its id or the phase it guards (before_phase)
// matches a -deny pattern, else approved when one matches an -approve
// pattern, else decided by -default (pending, the Harness's "wait", unless
// set to approve or deny). Patterns are path.Match globs ("deploy-*",
// "*"). Every decision is logged with the pattern that took it (-v).
// Diagnostics go to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strings"
	"time"

	"github.com/bridgekit/bridgekit/examples/providers/internal/cli"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

func main() {
	approve := flag.String("approve", "", "comma-separated globs of checkpoint ids or phases to approve")
	deny := flag.String("deny", "", "comma-separated globs of checkpoint ids or phases to deny (checked first)")
	def := flag.String("default", "pending", "decision when no pattern matches: pending, approve or deny")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Parse()
	log := cli.Logger(*verbose)
	r, err := newRules(*approve, *deny, *def)
	if err != nil {
		os.Exit(cli.Fatal("approval", err))
	}
	srv, err := service.New(agentpmservice.ServiceRoleApproval, handlers(r, log), &service.Options{Conn: rpc.Options{Logger: log}})
	if err != nil {
		os.Exit(cli.Fatal("approval", err))
	}
	os.Exit(cli.Serve("approval", srv, log, 5*time.Second, nil))
}

// rules decide checkpoints.
type rules struct {
	approve, deny []string
	def           agentpmservice.ApprovalDecisionValue
}

func newRules(approve, deny, def string) (*rules, error) {
	r := &rules{approve: split(approve), deny: split(deny), def: agentpmservice.ApprovalDecisionValue(def)}
	switch r.def {
	case agentpmservice.ApprovalDecisionValuePending, agentpmservice.ApprovalDecisionValueApprove, agentpmservice.ApprovalDecisionValueDeny:
	default:
		return nil, fmt.Errorf("-default %q: want pending, approve or deny", def)
	}
	for _, p := range append(r.approve, r.deny...) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	return r, nil
}

func split(list string) []string {
	var out []string
	for p := range strings.SplitSeq(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// decide returns the decision for a checkpoint and the pattern that took
// it ("" for the default).
func (r *rules) decide(c *agentpmservice.LoopCheckpoint) (agentpmservice.ApprovalDecisionValue, string) {
	match := func(patterns []string) string {
		for _, p := range patterns {
			for _, s := range []string{c.ID, c.BeforePhase} {
				if ok, _ := path.Match(p, s); ok {
					return p
				}
			}
		}
		return ""
	}
	if p := match(r.deny); p != "" {
		return agentpmservice.ApprovalDecisionValueDeny, p
	}
	if p := match(r.approve); p != "" {
		return agentpmservice.ApprovalDecisionValueApprove, p
	}
	return r.def, ""
}

func handlers(r *rules, log *slog.Logger) *agentpmservice.ServiceHandlers {
	return &agentpmservice.ServiceHandlers{
		InitializeApproval: func(context.Context, *agentpmservice.ApprovalInitialize) (*agentpmservice.ApprovalReadiness, error) {
			return &agentpmservice.ApprovalReadiness{Capabilities: &agentpmservice.ApprovalCapabilities{Cancellation: new(false)}}, nil
		},
		RequestApproval: func(ctx context.Context, p *agentpmservice.RequestApprovalPayload) (*agentpmservice.ApprovalDecision, error) {
			d, pattern := r.decide(&p.Checkpoint)
			log.Info("approval decided", "checkpoint", p.Checkpoint.ID, "before_phase", p.Checkpoint.BeforePhase, "decision", d, "pattern", pattern)
			return &agentpmservice.ApprovalDecision{Decision: &d}, ctx.Err()
		},
	}
}
