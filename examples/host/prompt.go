package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/auth"
	"github.com/bridgekit/bridgekit/servers/host/turn"
)

// Exit statuses of --prompt (README.md, "Exit statuses"). 128+n reports
// signal n.
const (
	exitCompleted       = 0
	exitHostError       = 1
	exitUsage           = 2
	exitAgentError      = 3
	exitRefused         = 4
	exitMaxTokens       = 5
	exitMaxTurnRequests = 6
	exitNotCompleted    = 7
	exitAgentCancelled  = 8
	exitRuntimeDied     = 9
	exitProtocol        = 10
	exitAuth            = 11
	exitDeniedCancelled = 12
	exitCannotStart     = 127
)

// outcome is how a prompt ended: the exit status and a sentence saying why.
type outcome struct {
	status  int
	summary string
}

// promptRun drives one prompt as the runtime's ACP client.
type promptRun struct {
	app  *app
	text string
	// argv is the runtime's command, for a terminal authentication method.
	argv []string
	// auth steers the choice of authentication method.
	auth auth.Options
	// slow is how long initialize may take before a terminal shows that
	// the host is waiting (0: never; stderr is not a terminal).
	slow time.Duration

	mu          sync.Mutex
	agent       *acp.AgentPeer
	session     acp.SessionID
	prompting   bool      // session/prompt is in flight
	cancelledBy os.Signal // the signal that made the host cancel, or stop
	harnRuntime bool      // the agent advertises Harn's terminal outcome
}

// hostVersion is this program's module version, for clientInfo.
func hostVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// run runs initialize, session/new and session/prompt on conn and says how
// the prompt ended. ctx ends only to abandon the runtime.
func (r *promptRun) run(ctx context.Context, conn *rpc.Conn) outcome {
	agent := acp.NewAgentPeer(conn)
	r.mu.Lock()
	r.agent = agent
	r.mu.Unlock()
	yes := true
	stopNotice := r.notice(ctx, "initialize")
	init, err := agent.Initialize(ctx, &acp.InitializeRequest{
		ProtocolVersion: 1,
		ClientCapabilities: &acp.ClientCapabilities{
			Fs:       &acp.FileSystemCapabilities{ReadTextFile: &yes, WriteTextFile: &yes},
			Terminal: &yes,
		},
		ClientInfo: wire.Some(acp.Implementation{Name: "bridgekit-host", Version: hostVersion()}),
	})
	stopNotice()
	if err != nil {
		return r.failed(ctx, "initialize", err)
	}
	if init.ProtocolVersion != 1 {
		return outcome{exitProtocol, fmt.Sprintf("the agent speaks ACP protocol version %d; this host speaks 1", init.ProtocolVersion)}
	}
	name := "an ACP agent"
	if info, ok := init.AgentInfo.Get(); ok {
		name = clean(info.Name + " " + info.Version)
	}
	kind := "a plain ACP agent"
	if adv := harnAdvertisement(init); adv != nil {
		kind = "a Harn runtime"
		if len(adv.SessionUpdateExtensions) > 0 {
			r.app.render.setHarnExtensions(adv.SessionUpdateExtensions)
		}
		r.mu.Lock()
		r.harnRuntime = slices.Contains(adv.PromptResultExtensionFields, "terminal")
		r.mu.Unlock()
	}
	r.app.render.Status("agent %s (%s)", name, kind)
	methods := auth.Methods(init)
	if o, ok := r.authenticate(ctx, agent, methods); !ok {
		return o
	}

	sess, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: r.app.ws.Dir(), MCPServers: []acp.MCPServer{}})
	if err != nil {
		if err := auth.Required(err, methods); errors.Is(err, auth.ErrMissing) {
			return r.authFailed(err)
		}
		return r.failed(ctx, "session/new", err)
	}
	r.mu.Lock()
	r.session, r.prompting = sess.SessionID, true
	stopped := r.cancelledBy != nil
	r.mu.Unlock()
	if stopped {
		return r.failed(ctx, "session/new", context.Canceled)
	}
	r.app.render.Status("session %s in %s", clean(string(sess.SessionID)), r.app.ws.Dir())

	res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{{Text: &acp.TextContent{Text: r.text}}},
	})
	r.mu.Lock()
	r.prompting = false
	r.mu.Unlock()
	r.app.render.endStream()
	if err != nil {
		return r.failed(ctx, "session/prompt", err)
	}
	return r.classify(res)
}

// authenticate authenticates as auth.Choose decides from the agent's
// methods: authenticate with an env_var method whose variables are set or
// the method -auth names, or an interactive run of a terminal method when
// -auth-terminal allows it. ok is false when the prompt cannot go on.
func (r *promptRun) authenticate(ctx context.Context, agent *acp.AgentPeer, methods []auth.Method) (o outcome, ok bool) {
	plan, err := auth.Choose(methods, r.auth)
	if err != nil {
		return r.authFailed(err), false
	}
	switch plan.Action {
	case auth.Authenticate:
		r.app.render.Status("authenticating with %s (%s)", clean(string(plan.Method.ID)), plan.Method.Type)
		if _, err := agent.Authenticate(ctx, &acp.AuthenticateRequest{MethodID: plan.Method.ID}); err != nil {
			if _, isRPC := errors.AsType[*rpc.Error](err); isRPC {
				return r.authFailed(fmt.Errorf("authenticate %s: %w%s", plan.Method.ID, err, auth.Describe(methods))), false
			}
			return r.failed(ctx, "authenticate", err), false
		}
	case auth.RunTerminal:
		cmd, err := auth.TerminalCommand(plan.Method, r.argv, os.Environ())
		if err != nil {
			return r.authFailed(err), false
		}
		r.app.render.Status("authenticating with %s: running %s", clean(string(plan.Method.ID)), clean(strings.Join(cmd.Args, " ")))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr
		if err := runInteractive(ctx, cmd); err != nil {
			return r.authFailed(fmt.Errorf("authentication method %s: %s: %w", plan.Method.ID, strings.Join(cmd.Args, " "), err)), false
		}
	}
	return outcome{}, true
}

// runInteractive runs cmd in the host's own process group (it may read
// the terminal), killing it when ctx ends.
func runInteractive(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// authFailed reports a missing credential or a failed authentication.
func (r *promptRun) authFailed(err error) outcome {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return outcome{exitAuth, strings.Join(lines, "\n") + "\n(choose a method with -auth ID; an env_var method needs its variables set in the host's environment; -auth-terminal lets the host run a terminal method)"}
}

// notice shows, on a terminal, that the host is still waiting for the
// agent to answer method, once r.slow has passed and every 5 s after; it
// returns the function that ends it.
func (r *promptRun) notice(ctx context.Context, method string) func() {
	if r.slow <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTimer(r.slow)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.app.render.Status("waiting for the agent to answer %s (%s)", method, time.Since(start).Round(time.Second))
				t.Reset(5 * time.Second)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// cancel is the first signal's action while a prompt runs: it sends
// session/cancel and answers the permission requests that follow
// "cancelled". It reports false when no prompt is in flight.
func (r *promptRun) cancel(sig os.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelledBy != nil {
		return r.prompting
	}
	r.cancelledBy = sig
	if !r.prompting {
		return false
	}
	r.app.cancelling.Store(true)
	agent, session := r.agent, r.session
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := agent.SessionCancel(ctx, &acp.CancelNotification{SessionID: session}); err != nil {
			r.app.render.Status("session/cancel not sent: %v", err)
		}
	}()
	return true
}

// signalled is the signal that made the host cancel or stop, if any.
func (r *promptRun) signalled() os.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelledBy
}

// failed says why a request of the prompt's flow failed.
func (r *promptRun) failed(ctx context.Context, method string, err error) outcome {
	if sig := r.signalled(); sig != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		return outcome{signalStatus(sig), fmt.Sprintf("stopped by %v before the agent answered %s", sig, method)}
	}
	var rerr *rpc.Error
	switch {
	case errors.As(err, &rerr):
		summary := fmt.Sprintf("the agent failed %s: error %d: %s", method, rerr.Code, clean(rerr.Message))
		if pe, ok := turn.ReadPromptError(rerr); ok {
			summary += " (Harn terminal class " + clean(pe.TerminalClass())
			if pe.Data.Retryable != nil && *pe.Data.Retryable {
				summary += ", retryable"
			}
			summary += ")"
		}
		return outcome{exitAgentError, summary}
	case errors.Is(err, rpc.ErrClosed):
		return outcome{exitRuntimeDied, fmt.Sprintf("the runtime ended the connection before it answered %s", method)}
	case errors.As(err, new(*wire.DecodeError)):
		return outcome{exitProtocol, fmt.Sprintf("the agent's answer to %s does not fit ACP: %v", method, err)}
	}
	return outcome{exitHostError, fmt.Sprintf("%s: %v", method, err)}
}

// harnAdvertisement is what a Harn runtime advertises under initialize's
// agentCapabilities._meta.harn; nil for an agent that advertises none (a
// plain ACP agent).
func harnAdvertisement(res *acp.InitializeResponse) *acp.HarnAgentCapabilities {
	if res.AgentCapabilities == nil {
		return nil
	}
	meta, ok := res.AgentCapabilities.Meta.Get()
	if !ok {
		return nil
	}
	return meta.Harn
}

// classify says how a prompt ended from the agent's answer (turn.Classify):
// a Harn runtime completes only with _meta.harn.terminal.kind "natural"; a
// plain ACP agent (one that advertises no terminal outcome) completes with
// end_turn.
func (r *promptRun) classify(res *acp.PromptResponse) outcome {
	r.mu.Lock()
	sig, harnRuntime := r.cancelledBy, r.harnRuntime
	r.mu.Unlock()
	o, err := turn.Classify(res)
	if err != nil {
		return outcome{exitProtocol, "the agent's answer to session/prompt: " + clean(err.Error())}
	}
	term := o.Terminal
	describe := func() string {
		if term == nil {
			return ""
		}
		s := "Harn terminal outcome " + clean(string(term.Kind))
		if term.Reason != "" {
			s += ", reason " + clean(term.Reason)
		}
		if term.Owner != "" {
			s += ", owner " + clean(string(term.Owner))
		}
		return s
	}
	switch {
	case o.Completed():
		return outcome{exitCompleted, "completed (" + describe() + ")"}
	case res.StopReason == acp.StopReasonCancelled || term != nil && term.Kind == acp.TerminalKindUserCancelled:
		if sig != nil {
			return outcome{signalStatus(sig), fmt.Sprintf("cancelled after %v: the agent ended the turn %s", sig, res.StopReason)}
		}
		if what := r.app.denied.Load(); what != nil {
			return outcome{exitDeniedCancelled, "the agent ended the turn cancelled after the host denied a permission (" + *what + ")"}
		}
		return outcome{exitAgentCancelled, "the agent cancelled the turn although the host did not ask it to"}
	case res.StopReason == acp.StopReasonRefusal:
		return outcome{exitRefused, "the agent refused to continue (stopReason refusal)"}
	case res.StopReason == acp.StopReasonMaxTokens:
		return outcome{exitMaxTokens, "the agent ran out of tokens (stopReason max_tokens)"}
	case res.StopReason == acp.StopReasonMaxTurnRequests:
		return outcome{exitMaxTurnRequests, "the agent reached its limit of requests in a turn (stopReason max_turn_requests)"}
	case o.Class() == turn.ClassIncomplete:
		return outcome{exitNotCompleted, "not completed: " + describe() + " (stopReason " + string(res.StopReason) + ")"}
	case o.Class() == turn.ClassEndTurn && harnRuntime:
		return outcome{exitNotCompleted, "not completed: end_turn without the Harn terminal outcome this runtime advertises"}
	case o.Class() == turn.ClassEndTurn:
		return outcome{exitCompleted, "completed: end_turn (a plain ACP agent, which reports no Harn terminal outcome)"}
	}
	return outcome{exitProtocol, fmt.Sprintf("unknown stopReason %q", res.StopReason)}
}

// signalStatus is the conventional exit status after signal sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}
