package main

// ─── STAND-INS FOR HARN TYPES gen/harn DOES NOT GENERATE YET ─────────────
//
// Every hand-written Harn wire type of this program is in this one file, so
// that once gen/harn has them (catalogue §1.4, §1.6, §1.7, §1.9, §1.10 and
// the initialize advertisement of §2.5) this file is all that changes:
//
//   - host/tools/list, skills/list, skills/fetch and skill/match are served
//     through HostHandlers.Fallback by bridgeFallback below; with generated
//     handler fields, set those fields to the app's methods instead and drop
//     bridgeFallback (keeping next as the Fallback);
//   - the params and results below become the generated types;
//   - harnUpdateOf reads a Harn session/update extension variant from the
//     raw JSON (the ACP union's Unknown); typed variants replace it;
//   - the prompt result's _meta.harn.terminal, the prompt error data and the
//     initialize advertisement are read from raw _meta here.
//
// Shapes follow the seed (../shared/seeds/000_…) and the catalogue.

import (
	"context"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

// Harn bridge methods served through the Fallback.
const (
	methodToolsList   = "host/tools/list"
	methodSkillsList  = "skills/list"
	methodSkillsFetch = "skills/fetch"
	methodSkillMatch  = "skill/match"
)

// toolDescriptor is one entry of host/tools/list's canonical result.
type toolDescriptor struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Schema      jsontext.Value `json:"schema"` // a JSON Schema object, or null
	Deprecated  bool           `json:"deprecated"`
}

// toolsListResult is host/tools/list's canonical result, {tools: [...]}.
type toolsListResult struct {
	Tools []toolDescriptor `json:"tools"`
}

// skillRef is one entry of skills/list's result (SkillManifestRef).
type skillRef struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source"`
}

// skillsFetchParams are skills/fetch's params.
type skillsFetchParams struct {
	ID string `json:"id"`
}

// skillManifest is the manifest of a fetched skill. Extra keeps the front
// matter keys the seed does not name.
type skillManifest struct {
	WhenToUse    string                    `json:"when_to_use"`
	AllowedTools []string                  `json:"allowed_tools"`
	Paths        []string                  `json:"paths"`
	Model        string                    `json:"model,omitzero"`
	Extra        map[string]jsontext.Value `json:",embed"`
}

// skillDocument is skills/fetch's result.
type skillDocument struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Body        string        `json:"body"`
	Manifest    skillManifest `json:"manifest"`
}

// skillMatchParams are skill/match's params (snake_case, as Harn sends them).
type skillMatchParams struct {
	Strategy     string           `json:"strategy"`
	Prompt       string           `json:"prompt"`
	WorkingFiles []string         `json:"working_files"`
	Candidates   []skillCandidate `json:"candidates"`
}

// skillCandidate is one skill Harn asks the host to rank.
type skillCandidate struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	WhenToUse   string   `json:"when_to_use"`
	Paths       []string `json:"paths"`
}

// skillMatchResult is skill/match's canonical result.
type skillMatchResult struct {
	Matches []skillMatch `json:"matches"`
}

// skillMatch is one ranked skill.
type skillMatch struct {
	Name   string  `json:"name"`
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// bridgeFallback serves the Harn bridge methods above and passes every other
// method to next (the ACP client side).
type bridgeFallback struct {
	app  *app
	next rpc.Handler
}

func (b *bridgeFallback) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case methodToolsList:
		return b.app.listTools(), nil
	case methodSkillsList:
		return b.app.listSkills(), nil
	case methodSkillsFetch:
		var p skillsFetchParams
		if err := rpc.DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		return b.app.fetchSkill(p.ID)
	case methodSkillMatch:
		var p skillMatchParams
		if err := rpc.DecodeParams(req.Params, &p); err != nil {
			return nil, err
		}
		return b.app.matchSkills(&p), nil
	}
	return b.next.Handle(ctx, req)
}

// harnUpdate is a session/update variant that ACP v0.12.2 does not define
// (a Harn extension such as progress or worker_update, or one this program
// does not know), read from its raw JSON.
type harnUpdate struct {
	Tag  string
	Harn map[string]jsontext.Value // the members of _meta.harn
	Root map[string]jsontext.Value // the other members at the update's root
}

// harnUpdateOf reads u, which must not be one of the ACP variants, as raw
// JSON: from Unknown, or by re-encoding it should a typed variant hold it.
func harnUpdateOf(u *acp.SessionUpdate) harnUpdate {
	raw := u.Unknown
	if raw == nil {
		raw, _ = json.Marshal(u)
	}
	var root map[string]jsontext.Value
	_ = json.Unmarshal(raw, &root)
	out := harnUpdate{Tag: u.Tag(), Root: root}
	var meta struct {
		Harn map[string]jsontext.Value `json:"harn"`
	}
	if m, ok := root["_meta"]; ok {
		_ = json.Unmarshal(m, &meta)
	}
	out.Harn = meta.Harn
	delete(out.Root, "_meta")
	delete(out.Root, "sessionUpdate")
	return out
}

// defaultHarnExtensions are the Harn session/update extension variants of
// the seed, rendered as such until initialize advertises a list of its own.
var defaultHarnExtensions = []string{
	"artifact", "available_commands_update", "fs_watch", "handoff", "hitl_request", "hitl_resolved", "log",
	"progress", "reminder_emitted", "skill_activated", "skill_deactivated", "skill_narrow", "skill_scope_tools",
	"tool_search_query", "tool_search_result", "transcript_compacted", "transcript_projected", "worker_update",
	"user_message",
}

// harnAdvertisement is what a Harn runtime advertises under
// initialize's agentCapabilities._meta.harn.
type harnAdvertisement struct {
	SessionUpdateExtensions     []string `json:"sessionUpdateExtensions"`
	PromptResultExtensionFields []string `json:"promptResultExtensionFields"`
}

// harnAdvertisementOf reads the advertisement; ok is false for an agent
// that advertises none (a plain ACP agent).
func harnAdvertisementOf(res *acp.InitializeResponse) (adv harnAdvertisement, ok bool) {
	if res.AgentCapabilities == nil {
		return adv, false
	}
	typed, present := res.AgentCapabilities.Meta.Get()
	if !present {
		return adv, false
	}
	meta, err := json.Marshal(&typed) // acp types _meta; read it as sent
	if err != nil {
		return adv, false
	}
	var m struct {
		Harn *harnAdvertisement `json:"harn"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Harn == nil {
		return adv, false
	}
	return *m.Harn, true
}

// harnTerminal is a prompt result's _meta.harn.terminal: the producer's
// terminal outcome. Only Kind "natural" is completion.
type harnTerminal struct {
	Kind          string         `json:"kind"`
	Reason        string         `json:"reason,omitzero"`
	Owner         string         `json:"owner,omitzero"`
	TerminalClass string         `json:"terminalClass,omitzero"`
	Message       string         `json:"message,omitzero"`
	Detail        jsontext.Value `json:"detail,omitzero"`
}

// harnTerminalOf reads the prompt result's terminal outcome, if it has one.
func harnTerminalOf(res *acp.PromptResponse) (*harnTerminal, bool) {
	typed, ok := res.Meta.Get()
	if !ok {
		return nil, false
	}
	meta, err := json.Marshal(&typed) // acp types _meta; read it as sent
	if err != nil {
		return nil, false
	}
	var m struct {
		Harn struct {
			Terminal *harnTerminal `json:"terminal"`
		} `json:"harn"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Harn.Terminal == nil || m.Harn.Terminal.Kind == "" {
		return nil, false
	}
	return m.Harn.Terminal, true
}

// harnPromptError is the data of a Harn runtime's session/prompt error
// (schema harn.acp.prompt_error.v1).
type harnPromptError struct {
	Schema        string `json:"schema"`
	TerminalClass string `json:"terminalClass"`
	Category      string `json:"category"`
	Reason        string `json:"reason"`
	Retryable     *bool  `json:"retryable"`
}

func harnPromptErrorOf(data jsontext.Value) (*harnPromptError, bool) {
	var e harnPromptError
	if json.Unmarshal(data, &e) != nil || e.Schema != "harn.acp.prompt_error.v1" {
		return nil, false
	}
	return &e, true
}

// harnToolName is a permission request's _meta.harn.toolName, if set.
func harnToolName(tc *acp.ToolCallUpdate) string {
	meta, ok := tc.Meta.Get()
	if !ok || meta.Harn == nil {
		return ""
	}
	raw, ok := meta.Harn.Extra.Get("toolName")
	if !ok {
		return ""
	}
	var name string
	_ = json.Unmarshal(raw, &name)
	return name
}
