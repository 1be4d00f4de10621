package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host/acpterm"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/prompt"
	"github.com/bridgekit/bridgekit/servers/host/shells"
	"github.com/bridgekit/bridgekit/servers/host/skills"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
	"github.com/bridgekit/bridgekit/servers/host/workspace"
)

// app is the host: what it serves, decided by its configuration and
// policy, to one runtime.
type app struct {
	ws     *workspace.Workspace
	files  *files.Server // fs/* and the file builtins, under the policy's fs
	policy *policy
	// perms answers session/request_permission with the policy's rules on
	// the tool call merged from what tracker kept of its session/update
	// notifications.
	perms   *permission.Host
	tracker *permission.Tracker
	tools   []configTool
	skills  *skills.Set
	render  *renderer
	shells  *shells.Provider // shell discovery, and the shells terminal/create may use
	terms   *terminal.Manager
	term    *acpterm.Server // terminal/* on terms, under the policy's terminal
	log     *slog.Logger
	// harnPeer says the runtime speaks Harn's extensions: it advertised
	// them in initialize (-prompt), or it is served the Harn bridge.
	// Only then do answers carry Harn's members (a denial's "reason").
	harnPeer atomic.Bool
	// metaUsage adds up the usage an agent reports only in its updates'
	// _meta (qwen: _meta.usage of a message chunk, per model request).
	metaUsage usageSum
}

// usageSum adds up usages reported one model request at a time.
type usageSum struct {
	mu   sync.Mutex
	sum  prompt.Usage
	seen bool
}

// add adds the usage of an update's _meta ({"usage": {...}}), if it has one.
func (s *usageSum) add(meta jsontext.Value) {
	if !bytes.Contains(meta, []byte(`"usage"`)) {
		return
	}
	var m struct {
		Usage *prompt.Usage `json:"usage"`
	}
	if json.Unmarshal(meta, &m, json.RejectUnknownMembers(false)) != nil || m.Usage == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = true
	s.sum.Total += m.Usage.Total
	s.sum.Input += m.Usage.Input
	s.sum.Output += m.Usage.Output
	s.sum.Thought = addCount(s.sum.Thought, m.Usage.Thought)
	s.sum.CachedRead = addCount(s.sum.CachedRead, m.Usage.CachedRead)
	s.sum.CachedWrite = addCount(s.sum.CachedWrite, m.Usage.CachedWrite)
}

// addCount adds an optional count to an optional sum.
func addCount(sum, n *int64) *int64 {
	switch {
	case n == nil:
		return sum
	case sum == nil:
		return new(*n)
	}
	return new(*sum + *n)
}

// total is the sum, or nil when no update reported usage.
func (s *usageSum) total() *prompt.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen {
		return nil
	}
	u := s.sum
	return &u
}

// maxWaits bounds the pending terminal/wait_for_exit calls. Each has a
// connection slot of its own besides the usual ones (main.go), so that
// waits never take the slots other requests need; it is kept at the usual
// count because every slot is also memory a peer that stops reading can
// make a handler hold.
const maxWaits = 8

// otherSlots is how many requests other than waits are handled at once:
// this host decides permissions from its policy, at once, so no request
// waits long for a person.
const otherSlots = 4

// appOptions are the files and directories an app is made from.
type appOptions struct {
	config, policy, workspace string
	render                    *renderer
	log                       *slog.Logger
}

func newApp(o appOptions) (*app, error) {
	cfg, err := loadConfig(o.config)
	if err != nil {
		return nil, err
	}
	pol, err := loadPolicy(o.policy)
	if err != nil {
		return nil, err
	}
	dir := o.workspace
	if dir == "" {
		dir = cfg.Workspace
	}
	if dir == "" {
		dir = "."
	}
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	skillSet, err := skills.Load(cfg.Skills)
	if err != nil {
		return nil, err
	}
	provider, err := shells.New(shells.Config{})
	if err != nil {
		return nil, fmt.Errorf("shell discovery: %w", err)
	}
	a := &app{ws: ws, files: newFiles(ws, pol, o.render), terms: terminal.New(&terminal.Limits{MaxWaits: maxWaits}), policy: pol, tracker: permission.NewTracker(nil),
		skills: skillSet, render: o.render, log: o.log, tools: cfg.Tools, shells: provider}
	a.term = newTerm(a.terms, a.files, pol, provider, o.render)
	a.perms = a.newPerms()
	return a, nil
}

// newFiles serves the workspace's files under the policy's fs lists,
// rendering every decision and failure.
func newFiles(ws *workspace.Workspace, pol *policy, r *renderer) *files.Server {
	return &files.Server{WS: ws,
		Allow: pol.fsAccess,
		Observe: func(e files.Access) {
			switch {
			case e.Decided && e.Allowed:
				r.line(r.paint("fs", cDim) + " " + e.Op + " " + clean(e.Path) + ": allowed (" + e.Reason + ")")
			case e.Decided:
				r.line(r.paint("fs", cRed) + " " + e.Op + " " + clean(e.Path) + ": denied (" + e.Reason + ")")
			default:
				r.line(r.paint("fs", cRed) + " " + e.Op + " " + clean(e.Path) + ": " + clean(e.Reason))
			}
		}}
}

// newTerm serves terminal/* on terms under the policy's terminal lists,
// rendering every terminal/create.
func newTerm(terms *terminal.Manager, fs *files.Server, pol *policy, sh *shells.Provider, r *renderer) *acpterm.Server {
	return &acpterm.Server{Terms: terms, Files: fs, Commands: pol.commands, Env: pol.Terminal.Env, Shells: sh,
		Observe: func(e acpterm.Event) {
			via := ""
			if e.Via != "" {
				via = " [" + clean(e.Via) + "]"
			}
			if !e.Allowed {
				r.line(r.paint("terminal", cRed) + via + " " + clean(e.Line) + ": " + clean(e.Reason))
				return
			}
			env := e.Env
			if env == "" {
				env = "(empty)"
			}
			r.line(r.paint("terminal", cDim) + " " + e.ID + via + " " + clean(e.Line) + ": allowed (" + e.Reason + ") env: " + clean(env))
		}}
}

// bridge is the Harn bridge the host serves, on the generated handler
// fields: shell discovery (host/call process.*, and host/capabilities from
// it), host/tools/list and builtin_call when the configuration lists
// tools, skills/list, skills/fetch and skill/match when it names a skills
// folder, and the notifications a runtime reports with (agent/idle,
// _harn/agentEvent, progress, log, output), rendered. What is not
// configured is left unset, so it is answered -32601.
func (a *app) bridge() *harn.HostHandlers {
	var h harn.HostHandlers
	a.shells.Register(&h)
	if len(a.tools) > 0 {
		h.HostToolsList = a.listTools
		h.BuiltinCall = a.builtinCall
	}
	a.skills.Register(&h, a.renderMatch)
	h.AgentIdle = func(_ context.Context, p *harn.AgentIdleParams) error { a.render.Idle(p); return nil }
	h.AgentEvent = func(_ context.Context, e *harn.AgentEvent) error { a.render.AgentEvent(e); return nil }
	h.Progress = func(_ context.Context, p *harn.Progress) error { a.render.Progress(p); return nil }
	h.Log = func(_ context.Context, l *harn.Log) error { a.render.Log(l); return nil }
	h.Output = func(_ context.Context, o *harn.OutputParams) error { a.render.Output(o); return nil }
	return &h
}

// client is the ACP client side the host serves on the same connection:
// session/update (rendered), session/request_permission, fs/* and
// terminal/* as the policy allows.
func (a *app) client() *acp.ClientHandlers {
	h := &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			a.tracker.Observe(n)
			a.render.Update(n)
			if c := n.Update.AgentMessageChunk; c != nil {
				if meta, ok := c.Meta.Get(); ok {
					a.metaUsage.add(meta)
				}
			}
			return nil
		},
		SessionRequestPermission: a.perms.Handle,
		FsReadTextFile:           a.files.ReadTextFile,
		FsWriteTextFile:          a.files.WriteTextFile,
	}
	a.term.Register(h)
	return h
}

// listTools serves host/tools/list from the configuration, in the
// canonical {tools: [...]} shape, every tool {name, description, schema,
// deprecated}.
func (a *app) listTools(context.Context, *harn.NoArgs) (*harn.HostToolsListResult, error) {
	tools := make([]harn.HostTool, 0, len(a.tools))
	for _, t := range a.tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = jsontext.Value("null")
		}
		tools = append(tools, harn.HostTool{Name: t.Name, Description: new(t.Description), Schema: schema, Deprecated: new(t.Deprecated)})
	}
	return harn.ToolsListResult(tools...), nil
}

// renderMatch shows a skill/match answer.
func (a *app) renderMatch(_ *harn.SkillMatchParams, ranked []skills.Ranked) {
	var shown []string
	for _, m := range ranked {
		shown = append(shown, clean(m.Name)+" "+strconv.FormatFloat(m.Score, 'f', -1, 64))
	}
	if len(shown) == 0 {
		shown = []string{"no match"}
	}
	a.render.line(a.render.paint("skill/match:", cBlue) + " " + strings.Join(shown, ", "))
}

// newPerms answers permission requests with the policy's rules,
// rendering each decision.
func (a *app) newPerms() *permission.Host {
	return &permission.Host{Policy: a.policy.permissions(a.ws), Tracker: a.tracker, Observe: a.renderPermission, Logger: a.log, HarnPeer: a.harnPeer.Load}
}

// renderPermission shows a permission decision; should describing the
// tool call fail, it shows the decision alone.
func (a *app) renderPermission(p *acp.RequestPermissionRequest, c *permission.Call, v permission.Verdict, res *acp.RequestPermissionResponse) {
	defer func() {
		if rec := recover(); rec != nil {
			a.render.line(fmt.Sprintf("%s: %s (%s)", a.render.paint("permission", cBold), a.render.paint("denied", cRed, cBold), v.Reason))
		}
	}()
	a.render.line(a.permissionLine(p, c, v, res))
}

func (a *app) permissionLine(p *acp.RequestPermissionRequest, c *permission.Call, v permission.Verdict, res *acp.RequestPermissionResponse) string {
	r := a.render
	head := r.paint("permission", cBold) + " " + strconv.Quote(cleanLine(c.Tool))
	if c.Kind != "" {
		head += " (" + string(c.Kind) + ")"
	}
	var shown []string
	for _, path := range c.Paths {
		if rel, err := a.ws.Resolve(path); err == nil {
			path = rel
		}
		if !slices.Contains(shown, path) {
			shown = append(shown, path)
		}
	}
	if len(shown) > 0 {
		head += " " + clean(strings.Join(shown, " "))
	}
	answer := "no answer"
	switch {
	case res == nil:
	case res.Outcome.Selected != nil:
		answer = "option " + strconv.Quote(clean(string(res.Outcome.Selected.OptionID)))
	case res.Outcome.Cancelled != nil:
		answer = "cancelled"
	}
	verdict := r.paint("denied", cRed, cBold)
	if v.Allow && res != nil && res.Outcome.Selected != nil {
		for _, o := range p.Options { // a grant the agent offered no option for went out as a denial
			if o.OptionID == res.Outcome.Selected.OptionID && o.Kind != acp.PermissionOptionKindRejectOnce && o.Kind != acp.PermissionOptionKindRejectAlways {
				verdict = r.paint("allowed", cGreen, cBold)
			}
		}
	}
	return fmt.Sprintf("%s: %s (%s) -> %s", head, verdict, v.Reason, answer)
}
