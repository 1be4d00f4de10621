// Package prompt runs one prompt as an ACP client, on a connection the
// host serves at the same time (servers/host's ServeCommandConn): it
// sends initialize (with the client's capabilities), authenticates as
// servers/host/auth chooses, opens a session (session/new) and sends
// session/prompt, and says how the prompt ended (Outcome).
//
// A Harn runtime has completed only with _meta.harn.terminal.kind
// "natural" (servers/host/turn); a plain ACP agent completes with
// end_turn. A turn the agent ends cancelled is the host's cancel when Cancel
// was called, a reaction to a denial when Options.Denied names one, and
// spontaneous otherwise. An auth_required answer (-32000) to any request,
// session/prompt included, is an Auth outcome that lists the agent's
// methods and what each needs.
package prompt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/auth"
	"github.com/bridgekit/bridgekit/servers/host/turn"
)

// Kind is how a prompt ended.
type Kind int

// Kinds of Outcome.
const (
	Completed       Kind = iota // Harn's natural terminal outcome, or a plain agent's end_turn
	HostError                   // an error of the host's own
	AgentError                  // the agent answered with a JSON-RPC error
	Refused                     // stopReason refusal
	MaxTokens                   // stopReason max_tokens
	MaxTurnRequests             // stopReason max_turn_requests
	NotCompleted                // a Harn terminal outcome other than natural, or end_turn without the one advertised
	AgentCancelled              // stopReason cancelled, unasked
	RuntimeDied                 // the connection ended before the answer
	Protocol                    // an answer that does not fit ACP
	Auth                        // a credential is missing, or authentication failed
	DeniedCancelled             // cancelled by the agent after the host denied a permission
	Signalled                   // the host cancelled (or stopped) after Outcome.Signal
)

// Outcome is how a prompt ended, with a sentence saying why. The sentence
// may quote the agent: sanitise it before showing it on a terminal.
type Outcome struct {
	Kind    Kind
	Signal  os.Signal // for Signalled
	Summary string
	// Usage is the turn's token usage when the agent's answer reports it;
	// nil otherwise.
	Usage *Usage
}

// Usage is a turn's token usage as an agent reports it in its
// session/prompt result: ACP's unstable PromptResponse.usage (read here
// whatever gen/acp types, as gen/acp keeps it among the result's extra
// members).
type Usage struct {
	Total  int64 `json:"totalTokens"`
	Input  int64 `json:"inputTokens"`
	Output int64 `json:"outputTokens"`
	// The optional counts: nil when the agent does not say.
	Thought     *int64 `json:"thoughtTokens"`
	CachedRead  *int64 `json:"cachedReadTokens"`
	CachedWrite *int64 `json:"cachedWriteTokens"`
}

// String says the usage in a line: "1234 tokens: 1200 input (800 cached),
// 34 output (12 thinking)".
func (u *Usage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tokens: %d input", u.Total, u.Input)
	var cached []string
	if u.CachedRead != nil && *u.CachedRead > 0 {
		cached = append(cached, fmt.Sprintf("%d cached", *u.CachedRead))
	}
	if u.CachedWrite != nil && *u.CachedWrite > 0 {
		cached = append(cached, fmt.Sprintf("%d written to the cache", *u.CachedWrite))
	}
	if len(cached) > 0 {
		b.WriteString(" (" + strings.Join(cached, ", ") + ")")
	}
	fmt.Fprintf(&b, ", %d output", u.Output)
	if u.Thought != nil && *u.Thought > 0 {
		fmt.Fprintf(&b, " (%d thinking)", *u.Thought)
	}
	return b.String()
}

// usageOf reads res's usage member or, when it has none, the token count
// some agents put in its _meta instead (codex-acp and gemini:
// _meta.quota.token_count, with names of either case); nil when it has
// neither.
func usageOf(res *acp.PromptResponse) *Usage {
	if raw, ok := res.Extra.Get("usage"); ok {
		var u Usage
		if json.Unmarshal(raw, &u, json.RejectUnknownMembers(false)) != nil {
			return nil
		}
		return &u
	}
	meta, ok := res.Meta.Get()
	if !ok {
		return nil
	}
	raw, err := json.Marshal(&meta)
	if err != nil {
		return nil
	}
	var m struct {
		Quota struct {
			Count map[string]int64 `json:"token_count"`
		} `json:"quota"`
	}
	if json.Unmarshal(raw, &m, json.RejectUnknownMembers(false)) != nil || len(m.Quota.Count) == 0 {
		return nil
	}
	c := m.Quota.Count
	count := func(names ...string) (int64, bool) {
		for _, n := range names {
			if v, ok := c[n]; ok {
				return v, true
			}
		}
		return 0, false
	}
	opt := func(names ...string) *int64 {
		if v, ok := count(names...); ok {
			return &v
		}
		return nil
	}
	in, okIn := count("inputTokens", "input_tokens")
	out, okOut := count("outputTokens", "output_tokens")
	if !okIn && !okOut {
		return nil
	}
	total, ok := count("totalTokens", "total_tokens")
	if !ok {
		total = in + out
	}
	return &Usage{Total: total, Input: in, Output: out,
		Thought:     opt("reasoningOutputTokens", "thoughtTokens", "reasoning_output_tokens"),
		CachedRead:  opt("cachedInputTokens", "cachedReadTokens", "cached_input_tokens"),
		CachedWrite: opt("cacheWriteInputTokens", "cachedWriteTokens", "cache_write_input_tokens")}
}

// Options configure a Run. Every callback is optional.
type Options struct {
	// Text is the prompt, Cwd the session's directory.
	Text, Cwd string
	// ClientName names the client in initialize's clientInfo (its version
	// is the main module's).
	ClientName string
	// Capabilities are initialize's clientCapabilities.
	Capabilities *acp.ClientCapabilities
	// Auth steers the choice of authentication method; Argv is the
	// agent's command, for a terminal method; AuthHint is added to the
	// summary of an Auth outcome (how to choose a method).
	Auth     auth.Options
	Argv     []string
	AuthHint string
	// Env is the agent's environment (NAME=value entries, as the host
	// starts it with), which a terminal method's interactive run gets
	// too; nil is this process's.
	Env []string
	// Slow is how long initialize may take before Status says the host
	// is waiting (then every 5 s); 0 never says it.
	Slow time.Duration
	// Status receives the run's progress lines ("agent NAME (KIND)",
	// "authenticating with ID", "session ID in DIR", ...).
	Status func(format string, args ...any)
	// OnHarn is told what a Harn runtime advertises in initialize.
	OnHarn func(*harn.AgentCapabilities)
	// PromptDone is called when session/prompt has been answered.
	PromptDone func()
	// OnCancel is called when Cancel sends session/cancel: ACP wants the
	// permission requests that follow answered "cancelled".
	OnCancel func()
	// Denied names the last permission request the host denied ("" for
	// none), so that a turn the agent then ends cancelled is told apart.
	Denied func() string
}

// Run drives one prompt. Create it with New; it is safe for concurrent
// use by Cancel and Signalled while Run runs.
type Run struct {
	opts Options

	mu          sync.Mutex
	agent       *acp.AgentPeer
	session     acp.SessionID
	prompting   bool      // session/prompt is in flight
	cancelledBy os.Signal // the signal that made the host cancel, or stop
	harnRuntime bool      // the agent advertises Harn's terminal outcome
	methods     []auth.Method
}

// New returns a Run with opts.
func New(opts Options) *Run { return &Run{opts: opts} }

// SetSlow sets Options.Slow before Run.
func (r *Run) SetSlow(d time.Duration) { r.opts.Slow = d }

func (r *Run) status(format string, args ...any) {
	switch {
	case r.opts.Status == nil:
	case r.opts.Auth.Gateway != nil:
		r.opts.Status("%s", r.opts.Auth.Gateway.Redactor().String(fmt.Sprintf(format, args...)))
	default:
		r.opts.Status(format, args...)
	}
}

// redactedURL is u with any password masked.
func redactedURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(unparsable URL)"
}

// hostVersion is this program's module version, for clientInfo.
func hostVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// Run runs initialize, authentication, session/new and session/prompt on
// conn and says how the prompt ended. ctx ends only to abandon the runtime.
// With Options.Auth.Gateway set, initialize says the client supports
// gateway methods, the agent is authenticated with its gateway method,
// and the gateway's header values are masked in every status line and
// summary.
func (r *Run) Run(ctx context.Context, conn *rpc.Conn) Outcome {
	o := r.run(ctx, conn)
	o.Summary = r.opts.Auth.Gateway.Redactor().String(o.Summary)
	return o
}

func (r *Run) run(ctx context.Context, conn *rpc.Conn) Outcome {
	agent := acp.NewAgentPeer(conn)
	r.mu.Lock()
	r.agent = agent
	r.mu.Unlock()
	// The agent is told what the client can do to authenticate: run a
	// terminal login (claude-agent-acp lists its terminal methods only
	// then), use a gateway.
	caps := auth.Capabilities(r.opts.Capabilities, auth.Options{Gateway: r.opts.Auth.Gateway, Terminal: r.opts.Auth.Terminal})
	client := r.opts.ClientName
	if client == "" {
		client = "bridgekit-host"
	}
	stopNotice := r.notice(ctx, "initialize")
	init, err := agent.Initialize(ctx, &acp.InitializeRequest{
		ProtocolVersion:    1,
		ClientCapabilities: caps,
		ClientInfo:         wire.Some(acp.Implementation{Name: client, Version: hostVersion()}),
	})
	stopNotice()
	if err != nil {
		return r.failed(ctx, "initialize", err)
	}
	if init.ProtocolVersion != 1 {
		return Outcome{Kind: Protocol, Summary: fmt.Sprintf("the agent speaks ACP protocol version %d; this host speaks 1", init.ProtocolVersion)}
	}
	name := "an ACP agent"
	if info, ok := init.AgentInfo.Get(); ok {
		name = info.Name + " " + info.Version
	}
	kind := "a plain ACP agent"
	adv, err := harnAdvertisement(init)
	if err != nil {
		kind = "an agent whose agentCapabilities._meta.harn is not Harn's (" + err.Error() + "), taken as a plain ACP agent"
	}
	if adv != nil {
		kind = "a Harn runtime"
		if r.opts.OnHarn != nil {
			r.opts.OnHarn(adv)
		}
		r.mu.Lock()
		r.harnRuntime = slices.Contains(adv.PromptResultExtensionFields, "terminal")
		r.mu.Unlock()
	}
	r.status("agent %s (%s)", name, kind)
	methods := auth.Methods(init)
	r.mu.Lock()
	r.methods = methods
	r.mu.Unlock()
	if o, ok := r.authenticate(ctx, agent, methods); !ok {
		return o
	}

	sess, err := agent.SessionNew(ctx, &acp.NewSessionRequest{Cwd: r.opts.Cwd, MCPServers: []acp.MCPServer{}})
	if err != nil {
		return r.failed(ctx, "session/new", err)
	}
	r.mu.Lock()
	r.session, r.prompting = sess.SessionID, true
	stopped := r.cancelledBy != nil
	r.mu.Unlock()
	if stopped {
		return r.failed(ctx, "session/new", context.Canceled)
	}
	r.status("session %s in %s", string(sess.SessionID), r.opts.Cwd)

	res, err := agent.SessionPrompt(ctx, &acp.PromptRequest{
		SessionID: sess.SessionID,
		Prompt:    []acp.ContentBlock{{Text: &acp.TextContent{Text: r.opts.Text}}},
	})
	r.mu.Lock()
	r.prompting = false
	r.mu.Unlock()
	if r.opts.PromptDone != nil {
		r.opts.PromptDone()
	}
	if err != nil {
		return r.failed(ctx, "session/prompt", err)
	}
	o := r.classify(res)
	o.Usage = usageOf(res)
	return o
}

// authenticate authenticates as auth.Choose decides from the agent's
// methods and Options.Auth: authenticate with the chosen method or an
// env_var method whose variables are set, or an interactive run of a
// terminal method (Options.Argv with its args, in the agent's
// environment, Options.Env, with its env, on this process's stdin and stderr) when
// Options.Auth.Terminal allows it. ok is false when the prompt cannot go
// on.
func (r *Run) authenticate(ctx context.Context, agent *acp.AgentPeer, methods []auth.Method) (o Outcome, ok bool) {
	plan, err := auth.Choose(methods, r.opts.Auth)
	if err != nil {
		return r.authFailed(err), false
	}
	switch plan.Action {
	case auth.Authenticate:
		if plan.Method.Gateway {
			r.status("authenticating with %s (%s) through the gateway %s", string(plan.Method.ID), plan.Method.Type, redactedURL(r.opts.Auth.Gateway.BaseURL))
		} else {
			r.status("authenticating with %s (%s)", string(plan.Method.ID), plan.Method.Type)
		}
		if _, err := agent.Authenticate(ctx, plan.Request(r.opts.Auth)); err != nil {
			if _, isRPC := errors.AsType[*rpc.Error](err); isRPC {
				return r.authFailed(fmt.Errorf("authenticate %s: %w%s", plan.Method.ID, err, auth.Describe(methods))), false
			}
			return r.failed(ctx, "authenticate", err), false
		}
	case auth.RunTerminal:
		cmd, err := auth.TerminalCommand(plan.Method, r.opts.Argv, r.environ())
		if err != nil {
			return r.authFailed(err), false
		}
		r.status("authenticating with %s: running %s", string(plan.Method.ID), strings.Join(cmd.Args, " "))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stderr, os.Stderr
		if err := runInteractive(ctx, cmd); err != nil {
			return r.authFailed(fmt.Errorf("authentication method %s: %s: %w", plan.Method.ID, strings.Join(cmd.Args, " "), err)), false
		}
	}
	return Outcome{}, true
}

// environ is the agent's environment: Options.Env, else this process's.
func (r *Run) environ() []string {
	if r.opts.Env != nil {
		return r.opts.Env
	}
	return os.Environ()
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
func (r *Run) authFailed(err error) Outcome {
	summary := err.Error()
	if r.opts.AuthHint != "" {
		summary += "\n" + r.opts.AuthHint
	}
	return Outcome{Kind: Auth, Summary: summary}
}

// notice shows, on a terminal, that the host is still waiting for the
// agent to answer method, once r.opts.Slow has passed and every 5 s after; it
// returns the function that ends it.
func (r *Run) notice(ctx context.Context, method string) func() {
	if r.opts.Slow <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTimer(r.opts.Slow)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.status("waiting for the agent to answer %s (%s)", method, time.Since(start).Round(time.Second))
				t.Reset(5 * time.Second)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Cancel is the first signal's action while a prompt runs: it sends
// session/cancel and answers the permission requests that follow
// "cancelled". It reports false when no prompt is in flight.
func (r *Run) Cancel(sig os.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelledBy != nil {
		return r.prompting
	}
	r.cancelledBy = sig
	if !r.prompting {
		return false
	}
	if r.opts.OnCancel != nil {
		r.opts.OnCancel()
	}
	agent, session := r.agent, r.session
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := agent.SessionCancel(ctx, &acp.CancelNotification{SessionID: session}); err != nil {
			r.status("session/cancel not sent: %v", err)
		}
	}()
	return true
}

// Signalled is the signal that made the host cancel or stop, if any.
func (r *Run) Signalled() os.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelledBy
}

// failed says why a request of the prompt's flow failed.
func (r *Run) failed(ctx context.Context, method string, err error) Outcome {
	if sig := r.Signalled(); sig != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		return Outcome{Kind: Signalled, Signal: sig, Summary: fmt.Sprintf("stopped by %v before the agent answered %s", sig, method)}
	}
	var rerr *rpc.Error
	if errors.As(err, &rerr) {
		if _, harnError := turn.ReadPromptError(rerr); !harnError {
			// ACP's auth_required (-32000), to whatever request: a missing
			// credential, listed with the agent's methods. (A Harn prompt
			// error reuses the code with a document of its own.)
			r.mu.Lock()
			methods := r.methods
			r.mu.Unlock()
			if aerr := auth.Required(err, methods, r.opts.Auth); errors.Is(aerr, auth.ErrMissing) {
				return r.authFailed(fmt.Errorf("%s: %w", method, aerr))
			}
		}
	}
	switch {
	case rerr != nil:
		summary := fmt.Sprintf("the agent failed %s: error %d: %s", method, rerr.Code, rerr.Message)
		if pe, ok := turn.ReadPromptError(rerr); ok {
			summary += " (Harn terminal class " + pe.TerminalClass()
			if pe.Data.Retryable != nil && *pe.Data.Retryable {
				summary += ", retryable"
			}
			summary += ")"
		}
		return Outcome{Kind: AgentError, Summary: summary}
	case errors.Is(err, rpc.ErrClosed):
		return Outcome{Kind: RuntimeDied, Summary: fmt.Sprintf("the runtime ended the connection before it answered %s", method)}
	case errors.As(err, new(*wire.DecodeError)):
		return Outcome{Kind: Protocol, Summary: fmt.Sprintf("the agent's answer to %s does not fit ACP: %v", method, err)}
	}
	return Outcome{Kind: HostError, Summary: fmt.Sprintf("%s: %v", method, err)}
}

// harnAdvertisement is what a Harn runtime advertises under initialize's
// agentCapabilities._meta.harn; nil for an agent that advertises none (a
// plain ACP agent), and an error for one whose _meta.harn does not have
// Harn's shape.
func harnAdvertisement(res *acp.InitializeResponse) (*harn.AgentCapabilities, error) {
	if res.AgentCapabilities == nil {
		return nil, nil
	}
	return harn.AgentCapabilitiesOf(res.AgentCapabilities.Meta)
}

// classify says how a prompt ended from the agent's answer (turn.Classify):
// a Harn runtime completes only with _meta.harn.terminal.kind "natural"; a
// plain ACP agent (one that advertises no terminal outcome) completes with
// end_turn.
func (r *Run) classify(res *acp.PromptResponse) Outcome {
	r.mu.Lock()
	sig, harnRuntime := r.cancelledBy, r.harnRuntime
	r.mu.Unlock()
	o, err := turn.Classify(res)
	if err != nil {
		return Outcome{Kind: Protocol, Summary: "the agent's answer to session/prompt: " + err.Error()}
	}
	term := o.Terminal
	describe := func() string {
		if term == nil {
			return ""
		}
		s := "Harn terminal outcome " + string(term.Kind)
		if term.Reason != "" {
			s += ", reason " + term.Reason
		}
		if term.Owner != "" {
			s += ", owner " + string(term.Owner)
		}
		return s
	}
	switch {
	case o.Completed():
		return Outcome{Kind: Completed, Summary: "completed (" + describe() + ")"}
	case res.StopReason == acp.StopReasonCancelled || term != nil && term.Kind == harn.TerminalKindUserCancelled:
		if sig != nil {
			return Outcome{Kind: Signalled, Signal: sig, Summary: fmt.Sprintf("cancelled after %v: the agent ended the turn %s", sig, res.StopReason)}
		}
		if r.opts.Denied != nil {
			if what := r.opts.Denied(); what != "" {
				return Outcome{Kind: DeniedCancelled, Summary: "the agent ended the turn cancelled after the host denied a permission (" + what + ")"}
			}
		}
		return Outcome{Kind: AgentCancelled, Summary: "the agent cancelled the turn although the host did not ask it to"}
	case res.StopReason == acp.StopReasonRefusal:
		return Outcome{Kind: Refused, Summary: "the agent refused to continue (stopReason refusal)"}
	case res.StopReason == acp.StopReasonMaxTokens:
		return Outcome{Kind: MaxTokens, Summary: "the agent ran out of tokens (stopReason max_tokens)"}
	case res.StopReason == acp.StopReasonMaxTurnRequests:
		return Outcome{Kind: MaxTurnRequests, Summary: "the agent reached its limit of requests in a turn (stopReason max_turn_requests)"}
	case o.Class() == turn.ClassIncomplete:
		return Outcome{Kind: NotCompleted, Summary: "not completed: " + describe() + " (stopReason " + string(res.StopReason) + ")"}
	case o.Class() == turn.ClassEndTurn && harnRuntime:
		return Outcome{Kind: NotCompleted, Summary: "not completed: end_turn without the Harn terminal outcome this runtime advertises"}
	case o.Class() == turn.ClassEndTurn:
		return Outcome{Kind: Completed, Summary: "completed: end_turn (a plain ACP agent, which reports no Harn terminal outcome)"}
	}
	return Outcome{Kind: Protocol, Summary: fmt.Sprintf("unknown stopReason %q", res.StopReason)}
}
