package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/host/shells"
)

// app is the host: what it serves, decided by its configuration and
// policy, to one runtime.
type app struct {
	ws     *workspace
	policy *policy
	tools  []toolDescriptor
	skills *skillSet
	render *renderer
	terms  terminals
	log    *slog.Logger

	// cancelling is set once the host has cancelled the prompt: ACP wants
	// the permission requests that follow answered "cancelled".
	cancelling atomic.Bool
}

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
	root, err := workspaceRoot(dir)
	if err != nil {
		return nil, err
	}
	skills, err := loadSkills(cfg.Skills)
	if err != nil {
		return nil, err
	}
	a := &app{ws: &workspace{root: root}, policy: pol, skills: skills, render: o.render, log: o.log, tools: []toolDescriptor{}}
	for _, t := range cfg.Tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = jsontext.Value("null")
		}
		a.tools = append(a.tools, toolDescriptor{Name: t.Name, Description: t.Description, Schema: schema, Deprecated: t.Deprecated})
	}
	return a, nil
}

// handlers is everything the host serves on its connection: shell
// discovery (host/call process.*) and host/capabilities, the Harn bridge
// methods of the configuration, and the ACP client side (session/update,
// session/request_permission, fs/*, terminal/*).
func (a *app) handlers(p *shells.Provider) *harn.HostHandlers {
	var h harn.HostHandlers
	p.Register(&h)
	h.Fallback = &bridgeFallback{app: a, next: &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			a.render.Update(n)
			return nil
		},
		SessionRequestPermission: a.requestPermission,
		FsReadTextFile:           a.readTextFile,
		FsWriteTextFile:          a.writeTextFile,
		TerminalCreate:           a.terminalCreate,
		TerminalOutput:           a.terminalOutput,
		TerminalWaitForExit:      a.terminalWaitForExit,
		TerminalKill:             a.terminalKill,
		TerminalRelease:          a.terminalRelease,
	}}
	return &h
}

// listTools serves host/tools/list from the configuration.
func (a *app) listTools() *toolsListResult { return &toolsListResult{Tools: a.tools} }

// listSkills serves skills/list from the skills folder.
func (a *app) listSkills() []skillRef {
	out := make([]skillRef, 0, len(a.skills.list))
	for _, s := range a.skills.list {
		out = append(out, skillRef{ID: s.ID, Name: s.Name, Description: s.Description, Source: "host"})
	}
	return out
}

// fetchSkill serves skills/fetch.
func (a *app) fetchSkill(id string) (*skillDocument, error) {
	s, ok := a.skills.byID[id]
	if !ok {
		return nil, rpc.NewError(rpc.CodeInvalidParams, fmt.Sprintf("skills/fetch: no skill %q", id), map[string]string{"id": id})
	}
	m := skillManifest{WhenToUse: s.WhenToUse, AllowedTools: s.AllowedTools, Paths: s.Paths, Model: s.Model, Extra: s.Extra}
	if m.AllowedTools == nil {
		m.AllowedTools = []string{}
	}
	if m.Paths == nil {
		m.Paths = []string{}
	}
	return &skillDocument{Name: s.Name, Description: s.Description, Body: s.Body, Manifest: m}, nil
}

// matchSkills serves skill/match with rankSkills.
func (a *app) matchSkills(p *skillMatchParams) *skillMatchResult {
	matches := rankSkills(p, a.skills)
	var shown []string
	for _, m := range matches {
		shown = append(shown, clean(m.Name)+" "+strconv.FormatFloat(m.Score, 'f', -1, 64))
	}
	if len(shown) == 0 {
		shown = []string{"no match"}
	}
	a.render.line(a.render.paint("skill/match:", cBlue) + " " + strings.Join(shown, ", "))
	return &skillMatchResult{Matches: matches}
}

// requestPermission serves session/request_permission from the policy. It
// fails closed: anything but the policy's allow (a panic here included)
// selects a reject option, or answers "cancelled" when the agent offers
// none; after the host cancelled the prompt every request is "cancelled".
func (a *app) requestPermission(_ context.Context, p *acp.RequestPermissionRequest) (res *acp.RequestPermissionResponse, err error) {
	d := deny("the host failed to decide")
	defer func() {
		if rec := recover(); rec != nil {
			a.log.Error("permission: panic while deciding; denying", "panic", rec)
			d = deny(fmt.Sprint("the host failed to decide: ", rec))
			res, err = permissionAnswer(d, p.Options), nil
		}
		a.renderPermission(p, d, res)
	}()
	if a.cancelling.Load() {
		d = deny("the prompt is being cancelled")
		return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
	}
	d = a.policy.permission(a.ws, &p.ToolCall)
	return permissionAnswer(d, p.Options), nil
}

// permissionAnswer selects the option the decision calls for: allow_once
// (else allow_always) to allow, reject_once (else reject_always) to deny;
// "cancelled" when no option fits a denial.
func permissionAnswer(d decision, options []acp.PermissionOption) *acp.RequestPermissionResponse {
	kinds := []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	if d.Allow {
		kinds = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	}
	for _, k := range kinds {
		for _, o := range options {
			if o.Kind == k {
				return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}
			}
		}
	}
	if d.Allow { // no option allows it: deny instead
		return permissionAnswer(deny(""), options)
	}
	return &acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
}

// renderPermission shows a permission decision; should describing the
// tool call fail, it shows the decision alone.
func (a *app) renderPermission(p *acp.RequestPermissionRequest, d decision, res *acp.RequestPermissionResponse) {
	defer func() {
		if rec := recover(); rec != nil {
			a.render.line(fmt.Sprintf("%s: %s (%s)", a.render.paint("permission", cBold), a.render.paint("denied", cRed, cBold), d.Reason))
		}
	}()
	a.render.line(a.permissionLine(p, d, res))
}

func (a *app) permissionLine(p *acp.RequestPermissionRequest, d decision, res *acp.RequestPermissionResponse) string {
	r, tc := a.render, &p.ToolCall
	tool := harnToolName(tc)
	if tool == "" {
		tool, _ = tc.Title.Get()
	}
	head := r.paint("permission", cBold) + " " + strconv.Quote(cleanLine(tool))
	if k, ok := tc.Kind.Get(); ok {
		head += " (" + string(k) + ")"
	}
	var shown []string
	for _, path := range toolCallPaths(tc) {
		if rel, _, err := a.ws.resolve(path); err == nil {
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
	if res != nil && res.Outcome.Selected != nil {
		for _, o := range p.Options {
			if o.OptionID == res.Outcome.Selected.OptionID && (o.Kind == acp.PermissionOptionKindAllowOnce || o.Kind == acp.PermissionOptionKindAllowAlways) {
				verdict = r.paint("allowed", cGreen, cBold)
			}
		}
	}
	return fmt.Sprintf("%s: %s (%s) -> %s", head, verdict, d.Reason, answer)
}
