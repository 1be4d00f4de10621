package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/agentpmmachine"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Agent configures AgentLoop: which host services a Run uses and how long
// it may go on.
type Agent struct {
	// Model is the registry id of the model host service; "" uses the
	// first model service registered.
	Model string `json:"model,omitempty"`
	// Provider and ModelName are the selection sent with each request
	// (default "host" and "host-model").
	Provider  string `json:"provider,omitempty"`
	ModelName string `json:"model_name,omitempty"`
	// Knowledge maps Knowledge package names to the host service that
	// serves them; a package it does not list goes to the first knowledge
	// service registered.
	Knowledge map[string]Package `json:"knowledge,omitempty"`
	// Memory maps Memory package names to the host service that serves
	// them; a package it does not list goes to the first memory service
	// registered.
	Memory map[string]Package `json:"memory,omitempty"`
	// PhaseID and Objective describe the Run's one phase (default "main"
	// and "Complete the request.").
	PhaseID   string `json:"phase_id,omitempty"`
	Objective string `json:"objective,omitempty"`
	// MaxTurns bounds the model turns (default 8); a Run that reaches it
	// ends limit_reached.
	MaxTurns int `json:"max_turns,omitempty"`
	// Checkpoint, if set, is an approval checkpoint before the phase: the
	// approval controller (role approval, registry id controller) decides.
	Checkpoint *agentpmservice.LoopCheckpoint `json:"checkpoint,omitempty"`
}

// Package routes a Knowledge or Memory package to a host service.
type Package struct {
	RegistryID string `json:"registry_id"`
	Version    string `json:"version,omitempty"`
	// SpaceModel and SchemaVersion are what Memory writes declare (default
	// collection and "1").
	SpaceModel    agentpmservice.MemorySpaceModel `json:"space_model,omitempty"`
	SchemaVersion string                          `json:"schema_version,omitempty"`
}

// AgentLoop returns a RunFunc that runs the Harness's phase loop with the
// client's host services: it asks the approval controller first when
// a.Checkpoint is set, then calls the model service (generate) turn after
// turn, carrying out the semantic actions each turn proposes: a
// knowledge_request goes to a knowledge service (retrieve, after the
// before_knowledge_request hooks registered), memory_read and memory_write
// to a memory service, and phase_completion ends the Run with its output.
// Other actions are rejected and the model is told so. Each step streams
// the events the Harness writes (phase_started, model_request_started,
// semantic_action_proposed, knowledge_retrieved, ...).
func AgentLoop(a Agent) RunFunc {
	if a.Provider == "" {
		a.Provider = "host"
	}
	if a.ModelName == "" {
		a.ModelName = "host-model"
	}
	if a.PhaseID == "" {
		a.PhaseID = "main"
	}
	if a.Objective == "" {
		a.Objective = "Complete the request."
	}
	if a.MaxTurns <= 0 {
		a.MaxTurns = 8
	}
	return func(ctx context.Context, r *Run) (*Outcome, error) {
		l := &loop{a: a, r: r, phaseExec: "phase-" + r.ID + "-1"}
		return l.run(ctx)
	}
}

type loop struct {
	a         Agent
	r         *Run
	phaseExec string
	turns     []agentpmservice.ModelRequestTurn
	repair    *string
}

func (l *loop) emit(ctx context.Context, typ agentpmmachine.EventType, payload agentpmmachine.EventPayload, corr string) error {
	ev := &agentpmmachine.HarnessEvent{EventType: typ, Payload: payload, PhaseExecutionID: &l.phaseExec}
	if corr != "" {
		ev.CorrelationID = &corr
	}
	return l.r.EmitEvent(ctx, ev)
}

func action(kind, identity, status string, fields any) agentpmmachine.EventPayload {
	a := &agentpmmachine.EventPayloadAction{ActionKind: kind, Identity: identity, Status: status}
	if fields != nil {
		a.Fields, _ = json.Marshal(fields, json.Deterministic(true))
	}
	return agentpmmachine.EventPayload{Action: a}
}

// turn appends an ordered turn of kind with members.
func (l *loop) turn(kind agentpmservice.ModelTurnKind, members ...any) {
	t := agentpmservice.ModelRequestTurn{Kind: kind}
	for i := 0; i+1 < len(members); i += 2 {
		raw, err := json.Marshal(members[i+1], wire.Fidelity)
		if err != nil {
			raw, _ = json.Marshal(err.Error())
		}
		t.Extra.Set(members[i].(string), raw)
	}
	l.turns = append(l.turns, t)
}

// first returns the registry id of the first registered service of role.
func (l *loop) first(role agentpmservice.ServiceRole) (string, bool) {
	for _, reg := range l.r.Registrations() {
		if reg.Role == role {
			return reg.RegistryID, true
		}
	}
	return "", false
}

func (l *loop) run(ctx context.Context) (*Outcome, error) {
	r := l.r
	model := l.a.Model
	if model == "" {
		var ok bool
		if model, ok = l.first(agentpmservice.ServiceRoleModel); !ok {
			return nil, errors.New("no model host service is registered")
		}
	}
	if err := l.emit(ctx, agentpmmachine.EventTypePhaseStarted, agentpmmachine.EventPayload{Phase: &agentpmmachine.EventPayloadPhase{PhaseID: l.a.PhaseID}}, ""); err != nil {
		return nil, err
	}
	if out, err := l.approve(ctx); out != nil || err != nil {
		return out, err
	}
	l.turn(agentpmservice.ModelTurnKindUserInput, "content", r.Input)
	selection := agentpmservice.ModelProviderSelection{Provider: l.a.Provider, Model: l.a.ModelName, Options: jsontext.Value(`{}`)}
	for n := 1; n <= l.a.MaxTurns; n++ {
		r.Yield(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req := l.request(&selection)
		corr := "model-" + strconv.Itoa(n)
		_ = l.emit(ctx, agentpmmachine.EventTypeModelRequestStarted, action("model", l.a.Provider+"/"+l.a.ModelName, "started", map[string]any{"turn": n}), corr)
		var mt agentpmservice.ModelTurn
		if err := r.HostService(ctx, agentpmservice.ServiceRoleModel, model, "generate", &agentpmservice.GeneratePayload{Selection: selection, Request: req}, &mt); err != nil {
			_ = l.emit(context.WithoutCancel(ctx), agentpmmachine.EventTypeModelRequestFailed, action("model", l.a.Provider+"/"+l.a.ModelName, "failed", map[string]any{"message": err.Error()}), corr)
			return nil, err
		}
		l.usage(mt.Usage)
		// The turn's text, when it has some, is the content of its
		// completion event (subject to the content policy).
		done := action("model", l.a.Provider+"/"+l.a.ModelName, "completed", map[string]any{"turn": n, "actions": len(mt.Actions)})
		if text, ok := mt.AssistantContent.Get(); ok {
			content, _ := json.Marshal(text)
			done = agentpmmachine.EventPayload{Content: &agentpmmachine.EventPayloadContent{Label: "assistant_content", Content: content}}
			l.turn(agentpmservice.ModelTurnKindAssistantContent, "content", text)
		}
		_ = l.emit(ctx, agentpmmachine.EventTypeModelRequestCompleted, done, corr)
		l.repair = nil
		if len(mt.Actions) == 0 {
			msg := "propose a semantic action or complete the phase"
			l.repair = &msg
			r.Report.RepairCount++
			l.turn(agentpmservice.ModelTurnKindRepairFeedback, "content", msg)
			_ = l.emit(ctx, agentpmmachine.EventTypeModelRepairRequested, lifecycle(msg, nil), corr)
			continue
		}
		for _, p := range mt.Actions {
			out, err := l.act(ctx, p)
			if out != nil || err != nil {
				return out, err
			}
		}
	}
	_ = l.emit(ctx, agentpmmachine.EventTypeLoopLimitReached, lifecycle("the phase reached its turn limit", map[string]any{"max_turns": l.a.MaxTurns}), "")
	return &Outcome{Status: agentpmmachine.TerminalStatusLimitReached}, nil
}

// approve asks the approval controller before the phase, when the agent
// has a checkpoint. It returns an outcome when the Run must end.
func (l *loop) approve(ctx context.Context) (*Outcome, error) {
	cp := l.a.Checkpoint
	if cp == nil {
		return nil, nil
	}
	r := l.r
	_ = l.emit(ctx, agentpmmachine.EventTypeApprovalRequested, action("approval", cp.ID, "requested", nil), cp.ID)
	var d agentpmservice.ApprovalDecision
	if err := r.HostService(ctx, agentpmservice.ServiceRoleApproval, "controller", "request_approval", &agentpmservice.RequestApprovalPayload{Checkpoint: *cp}, &d); err != nil {
		return nil, err
	}
	switch d.Outcome() {
	case agentpmservice.ApprovalDecisionValueApprove, agentpmservice.ApprovalDecisionValueApproved:
		r.Report.ApprovalSummary["approved"]++
		return nil, l.emit(ctx, agentpmmachine.EventTypeApprovalApproved, action("approval", cp.ID, "approved", nil), cp.ID)
	case agentpmservice.ApprovalDecisionValueDeny, agentpmservice.ApprovalDecisionValueDenied:
		r.Report.ApprovalSummary["denied"]++
		_ = l.emit(ctx, agentpmmachine.EventTypeApprovalDenied, action("approval", cp.ID, "denied", nil), cp.ID)
		return &Outcome{Status: agentpmmachine.TerminalStatusAborted}, nil
	case agentpmservice.ApprovalDecisionValuePending:
		r.Report.ApprovalSummary["pending"]++
		return nil, &rpc.Error{Name: agentpmmachine.ErrRunFailed.Name, Message: fmt.Sprintf("machine surface cannot retain pending approval for checkpoint `%s`", cp.ID)}
	}
	_ = l.emit(ctx, agentpmmachine.EventTypeApprovalFailed, action("approval", cp.ID, "failed", nil), cp.ID)
	return nil, fmt.Errorf("approval controller answered %q for checkpoint `%s`", d.Outcome(), cp.ID)
}

// request is the model request of the next turn.
func (l *loop) request(sel *agentpmservice.ModelProviderSelection) agentpmservice.ModelRequest {
	r := l.r
	runtime, _ := json.Marshal(map[string]any{"session_id": r.SessionID(), "agent": r.Report.Agent.Name}, json.Deterministic(true))
	phase, _ := json.Marshal(map[string]any{"phase_id": l.a.PhaseID, "objective": l.a.Objective})
	implicit := true
	return agentpmservice.ModelRequest{
		Runtime: runtime,
		Model:   sel,
		Prompt: agentpmservice.ModelPrompt{
			Sections:      []agentpmservice.PromptSection{{Number: 1, Title: "Objective", Content: l.a.Objective}, {Number: 2, Title: "Input", Content: r.Input}},
			ActionAliases: []agentpmservice.ActionAlias{},
			Completion:    agentpmservice.PhaseCompletionContract{PhaseID: &l.a.PhaseID, ExplicitOutcomes: []string{}, ImplicitComplete: &implicit},
			Diagnostics:   []string{},
		},
		OrderedTurns:      slices.Clone(l.turns),
		RunID:             r.ID,
		PhaseExecutionID:  l.phaseExec,
		PhaseID:           l.a.PhaseID,
		PhaseObjective:    l.a.Objective,
		RunInput:          r.Input,
		PriorPhaseResults: []jsontext.Value{},
		Transcript:        []jsontext.Value{},
		EffectivePhase:    phase,
		RepairFeedback:    l.repair,
	}
}

// usage adds a model turn's usage to the Run's.
func (l *loop) usage(u *agentpmservice.RunUsage) {
	if u == nil || u.Tokens == nil {
		return
	}
	l.r.usageMu.Lock()
	defer l.r.usageMu.Unlock()
	total := &l.r.Report.Usage
	if total.Tokens == nil {
		total.Tokens = &agentpmservice.TokenUsage{}
	}
	add := func(dst *wire.Nullable[int64], src wire.Nullable[int64]) {
		if v, ok := src.Get(); ok {
			old, _ := dst.Get()
			*dst = wire.Some(old + v)
		}
	}
	add(&total.Tokens.InputTokens, u.Tokens.InputTokens)
	add(&total.Tokens.OutputTokens, u.Tokens.OutputTokens)
	add(&total.Tokens.TotalTokens, u.Tokens.TotalTokens)
}

// act carries out one proposed action; it returns an outcome when the
// action ends the Run.
func (l *loop) act(ctx context.Context, p agentpmservice.SemanticActionProposal) (*Outcome, error) {
	r := l.r
	raw, _ := json.Marshal(p.Action, wire.Fidelity)
	kind := actionKind(&p.Action)
	_ = l.emit(ctx, agentpmmachine.EventTypeSemanticActionProposed, action(kind, p.ID, "proposed", nil), p.ID)
	l.turn(agentpmservice.ModelTurnKindSemanticActionCall, "action_id", p.ID, "action", raw)
	var result any
	var err error
	switch a := &p.Action; {
	case a.PhaseCompletion != nil:
		pc := a.PhaseCompletion
		var outcome *string
		if o, ok := pc.Outcome.Get(); ok {
			outcome = &o
		}
		_ = l.emit(ctx, agentpmmachine.EventTypeSemanticActionCompleted, action(kind, p.ID, "completed", nil), p.ID)
		_ = l.emit(ctx, agentpmmachine.EventTypePhaseResultReady, agentpmmachine.EventPayload{Phase: &agentpmmachine.EventPayloadPhase{PhaseID: l.a.PhaseID, Outcome: outcome, Output: pc.Output}}, p.ID)
		r.Report.PhaseSummaries = append(r.Report.PhaseSummaries, agentpmmachine.PhaseSummary{PhaseExecutionID: l.phaseExec, PhaseID: l.a.PhaseID, Outcome: outcome, Status: "completed"})
		r.Report.ActionSummaries = append(r.Report.ActionSummaries, agentpmmachine.ActionSummary{ActionKind: kind, Identity: p.ID, Status: "completed"})
		return &Outcome{Status: agentpmmachine.TerminalStatusEnded, Output: pc.Output}, nil
	case a.KnowledgeRequest != nil:
		result, err = l.knowledge(ctx, p.ID, a.KnowledgeRequest)
	case a.MemoryRead != nil:
		result, err = l.memoryRead(ctx, p.ID, a.MemoryRead)
	case a.MemoryWrite != nil:
		result, err = l.memoryWrite(ctx, p.ID, a.MemoryWrite)
	default:
		msg := fmt.Sprintf("action type %s is not available in this Harness", kind)
		_ = l.emit(ctx, agentpmmachine.EventTypeSemanticActionRejected, action(kind, p.ID, "rejected", map[string]any{"reason": msg}), p.ID)
		r.Report.ActionSummaries = append(r.Report.ActionSummaries, agentpmmachine.ActionSummary{ActionKind: kind, Identity: p.ID, Status: "rejected", Error: &msg})
		l.turn(agentpmservice.ModelTurnKindRepairFeedback, "action_id", p.ID, "content", msg)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	_ = l.emit(ctx, agentpmmachine.EventTypeSemanticActionCompleted, action(kind, p.ID, "completed", nil), p.ID)
	r.Report.ActionSummaries = append(r.Report.ActionSummaries, agentpmmachine.ActionSummary{ActionKind: kind, Identity: p.ID, Status: "completed"})
	l.turn(agentpmservice.ModelTurnKindSemanticActionResult, "action_id", p.ID, "result", result)
	return nil, nil
}

// actionKind names an action as events and reports do.
func actionKind(a *agentpmservice.SemanticAction) string {
	switch {
	case a.AgentPmTool != nil:
		return "agentpm_tool"
	case a.ExternalMCPTool != nil:
		return "external_mcp_tool"
	case a.SkillResourceRead != nil:
		return "skill_resource_read"
	case a.KnowledgeRequest != nil:
		return "knowledge_request"
	case a.MemoryRead != nil:
		return "memory_read"
	case a.MemoryWrite != nil:
		return "memory_write"
	case a.PhaseCompletion != nil:
		return "phase_completion"
	}
	if t := rpc.Member(a.Unknown, "type"); t.Kind() == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return "unknown"
}

// route finds the host service of a package.
func (l *loop) route(routes map[string]Package, role agentpmservice.ServiceRole, pkg string) (Package, error) {
	if p, ok := routes[pkg]; ok {
		return p, nil
	}
	id, ok := l.first(role)
	if !ok {
		return Package{}, fmt.Errorf("no %s host service is registered for package `%s`: %w", role, pkg, ErrNotRegistered)
	}
	return Package{RegistryID: id}, nil
}

// hooks returns the hook services that serve hook, in registration order.
func (l *loop) hooks(hook agentpmservice.HookID) []Registration {
	var out []Registration
	for _, reg := range l.r.Registrations() {
		if reg.Role == agentpmservice.ServiceRoleHook && slices.Contains(reg.Hooks, hook) {
			out = append(out, reg)
		}
	}
	return out
}

// failedRetrieval is the result the Harness gives the model when a
// retrieval could not be made.
func failedRetrieval(req *agentpmservice.KnowledgeRuntimeRequest, code, msg string) *agentpmservice.KnowledgeRuntimeResult {
	return &agentpmservice.KnowledgeRuntimeResult{Package: req.Package, Version: req.Version, Mode: req.Mode,
		Error: &agentpmservice.KnowledgeRuntimeFailure{Code: code, Message: msg}}
}

func (l *loop) knowledge(ctx context.Context, id string, k *agentpmservice.SemanticActionKnowledgeRequest) (any, error) {
	r := l.r
	route, err := l.route(l.a.Knowledge, agentpmservice.ServiceRoleKnowledge, k.Package)
	if err != nil {
		return nil, err
	}
	version := route.Version
	if version == "" {
		version = "0.0.0"
	}
	req := agentpmservice.KnowledgeRuntimeRequest{Package: k.Package, Version: version, Document: k.Document, Query: k.Query,
		TopK: k.TopK, ScoreThreshold: k.ScoreThreshold, ReturnCitations: k.ReturnCitations, Extra: k.Extra}
	switch {
	case k.Mode != nil:
		req.Mode = *k.Mode
	case k.Document != nil:
		req.Mode = agentpmservice.KnowledgeRequestModeContextDocument
	default:
		req.Mode = agentpmservice.KnowledgeRequestModeVectorQuery
	}
	for _, h := range l.hooks(agentpmservice.HookIDBeforeKnowledgeRequest) {
		_ = l.emit(ctx, agentpmmachine.EventTypeHookStarted, action("hook", string(agentpmservice.HookIDBeforeKnowledgeRequest), "started", map[string]any{"registry_id": h.RegistryID}), id)
		var d agentpmservice.BeforeKnowledgeRequestDecision
		// The Harness always sends the hook id beside the input.
		hookID := string(agentpmservice.HookIDBeforeKnowledgeRequest)
		hook := &agentpmservice.BeforeKnowledgeRequestHook{Hook: &hookID, Input: agentpmservice.BeforeKnowledgeRequestInput{PhaseID: l.a.PhaseID, Request: req}}
		if err := r.HostService(ctx, agentpmservice.ServiceRoleHook, h.RegistryID, string(agentpmservice.HookIDBeforeKnowledgeRequest), hook, &d); err != nil {
			// SDK hooks fail closed.
			_ = l.emit(context.WithoutCancel(ctx), agentpmmachine.EventTypeHookFailed, action("hook", string(agentpmservice.HookIDBeforeKnowledgeRequest), "failed", map[string]any{"registry_id": h.RegistryID}), id)
			return nil, err
		}
		switch {
		case d.Reject != nil:
			reason := "rejected by hook"
			if d.Reject.Reason != nil {
				reason = *d.Reject.Reason
			}
			_ = l.emit(ctx, agentpmmachine.EventTypeHookRejected, action("hook", string(agentpmservice.HookIDBeforeKnowledgeRequest), "rejected", map[string]any{"registry_id": h.RegistryID, "reason": reason}), id)
			l.summary(&r.Report.KnowledgeSummaries, "knowledge_request", k.Package, "rejected")
			return failedRetrieval(&req, "hook_rejected", reason), nil
		case d.Continue != nil && d.Continue.Patch != nil:
			patch := d.Continue.Patch
			req.Document = or(patch.Document, req.Document)
			req.Query = or(patch.Query, req.Query)
			req.TopK = or(patch.TopK, req.TopK)
			req.ScoreThreshold = or(patch.ScoreThreshold, req.ScoreThreshold)
			req.ReturnCitations = or(patch.ReturnCitations, req.ReturnCitations)
		case d.Continue == nil:
			return nil, fmt.Errorf("hook %s answered a decision this Harness does not know: %s", h.RegistryID, rpc.Truncate(string(d.Unknown), rpc.MaxEcho))
		}
		_ = l.emit(ctx, agentpmmachine.EventTypeHookCompleted, action("hook", string(agentpmservice.HookIDBeforeKnowledgeRequest), "completed", map[string]any{"registry_id": h.RegistryID}), id)
	}
	_ = l.emit(ctx, agentpmmachine.EventTypeKnowledgeRequestStarted, action("knowledge", k.Package, "started", map[string]any{"registry_id": route.RegistryID, "mode": req.Mode}), id)
	var res agentpmservice.KnowledgeRuntimeResult
	err = r.HostService(ctx, agentpmservice.ServiceRoleKnowledge, route.RegistryID, "retrieve", &agentpmservice.RetrievePayload{Request: req}, &res)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		// A transport failure reaches the model as a typed failure.
		res = *failedRetrieval(&req, "knowledge_runtime_failed", err.Error())
	}
	if res.Ok {
		_ = l.emit(ctx, agentpmmachine.EventTypeKnowledgeRetrieved, action("knowledge", k.Package, "completed", map[string]any{"results": len(res.Results), "citations": len(res.Citations)}), id)
		l.summary(&r.Report.KnowledgeSummaries, "knowledge_request", k.Package, "completed")
	} else {
		code := ""
		if res.Error != nil {
			code = res.Error.Code
		}
		_ = l.emit(ctx, agentpmmachine.EventTypeKnowledgeFailed, action("knowledge", k.Package, "failed", map[string]any{"code": code}), id)
		l.summary(&r.Report.KnowledgeSummaries, "knowledge_request", k.Package, "failed")
	}
	return &res, nil
}

func or[T any](patch, old *T) *T {
	if patch != nil {
		return patch
	}
	return old
}

// summary counts an operation in a report summary list.
func (l *loop) summary(list *[]agentpmmachine.OperationSummary, kind, identity, status string) {
	for i := range *list {
		s := &(*list)[i]
		if s.OperationKind == kind && s.Identity == identity && s.Status == status {
			s.Count++
			return
		}
	}
	*list = append(*list, agentpmmachine.OperationSummary{OperationKind: kind, Identity: identity, Status: status, Count: 1})
}

func (l *loop) scope() agentpmservice.MemoryScope {
	scope := agentpmservice.MemoryScope{}
	for k, v := range l.r.ss.s.opts.Scopes {
		scope[k] = v
	}
	return scope
}

func (l *loop) memoryRead(ctx context.Context, id string, m *agentpmservice.SemanticActionMemoryRead) (any, error) {
	r := l.r
	route, err := l.route(l.a.Memory, agentpmservice.ServiceRoleMemory, m.Package)
	if err != nil {
		return nil, err
	}
	req := agentpmservice.MemoryReadRequest{Package: m.Package, PackageVersion: orDefault(route.Version, "0.0.0"), Space: m.Space, Scope: l.scope(), Mode: m.Mode,
		RecordID: m.RecordID, RecordType: m.RecordType, Filter: m.Filter, Query: m.Query, Limit: m.Limit, Now: timestamp(r.ss.s.opts.Now())}
	_ = l.emit(ctx, agentpmmachine.EventTypeMemoryReadStarted, action("memory", m.Package+"/"+m.Space, "started", map[string]any{"mode": m.Mode}), id)
	var res agentpmservice.MemoryReadResult
	if err := r.HostService(ctx, agentpmservice.ServiceRoleMemory, route.RegistryID, "read", &agentpmservice.MemoryReadPayload{Request: req}, &res); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		res = agentpmservice.MemoryReadResult{Package: m.Package, PackageVersion: req.PackageVersion, Space: m.Space, Error: &agentpmservice.MemoryRuntimeFailure{Code: "memory_runtime_failed", Message: err.Error()}}
	}
	status, typ := "completed", agentpmmachine.EventTypeMemoryReadCompleted
	if !res.Ok {
		status, typ = "failed", agentpmmachine.EventTypeMemoryReadFailed
	}
	_ = l.emit(ctx, typ, action("memory", m.Package+"/"+m.Space, status, map[string]any{"records": len(res.Records)}), id)
	l.summary(&r.Report.MemorySummaries, "memory_read", m.Package+"/"+m.Space, status)
	return &res, nil
}

func (l *loop) memoryWrite(ctx context.Context, id string, m *agentpmservice.SemanticActionMemoryWrite) (any, error) {
	r := l.r
	route, err := l.route(l.a.Memory, agentpmservice.ServiceRoleMemory, m.Package)
	if err != nil {
		return nil, err
	}
	model := route.SpaceModel
	if model == "" {
		model = agentpmservice.MemorySpaceModelCollection
	}
	provenance, _ := json.Marshal(map[string]string{"run_id": r.ID, "action_id": id}, json.Deterministic(true))
	req := agentpmservice.MemoryWriteRequest{Package: m.Package, PackageVersion: orDefault(route.Version, "0.0.0"), Space: m.Space, SpaceModel: model,
		RecordType: m.RecordType, SchemaVersion: orDefault(route.SchemaVersion, "1"), Scope: l.scope(), Operation: m.Operation,
		RecordID: m.RecordID, Content: m.Content, Provenance: provenance, Now: timestamp(r.ss.s.opts.Now())}
	_ = l.emit(ctx, agentpmmachine.EventTypeMemoryWriteStarted, action("memory", m.Package+"/"+m.Space, "started", map[string]any{"operation": m.Operation}), id)
	var res agentpmservice.MemoryWriteResult
	if err := r.HostService(ctx, agentpmservice.ServiceRoleMemory, route.RegistryID, "write", &agentpmservice.MemoryWritePayload{Request: req}, &res); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		res = agentpmservice.MemoryWriteResult{Package: m.Package, PackageVersion: req.PackageVersion, Space: m.Space, Error: &agentpmservice.MemoryRuntimeFailure{Code: "memory_runtime_failed", Message: err.Error()}}
	}
	status, typ := "completed", agentpmmachine.EventTypeMemoryWriteCompleted
	if !res.Ok {
		status, typ = "failed", agentpmmachine.EventTypeMemoryWriteFailed
	}
	_ = l.emit(ctx, typ, action("memory", m.Package+"/"+m.Space, status, nil), id)
	l.summary(&r.Report.MemorySummaries, "memory_write", m.Package+"/"+m.Space, status)
	return &res, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
