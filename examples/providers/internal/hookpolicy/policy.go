package hookpolicy

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// HookID names a hook of the agentpm-service hook role.
type HookID string

// The hooks Harness invokes.
const (
	BeforeModelRequest      HookID = "before_model_request"
	BeforeToolSelection     HookID = "before_tool_selection"
	BeforeToolCall          HookID = "before_tool_call"
	BeforeKnowledgeRequest  HookID = "before_knowledge_request"
	AfterKnowledgeRetrieval HookID = "after_knowledge_retrieval"
	BeforeMemoryRead        HookID = "before_memory_read"
	BeforeMemoryWrite       HookID = "before_memory_write"
	BeforeMemoryOperation   HookID = "before_memory_operation"
)

// Hooks lists every hook id, in the protocol's order.
var Hooks = []HookID{BeforeModelRequest, BeforeToolSelection, BeforeToolCall, BeforeKnowledgeRequest,
	AfterKnowledgeRetrieval, BeforeMemoryRead, BeforeMemoryWrite, BeforeMemoryOperation}

func knownHook(h HookID) bool {
	for _, k := range Hooks {
		if k == h {
			return true
		}
	}
	return false
}

// Action is a hook decision.
type Action string

const (
	Continue Action = "continue"
	Reject   Action = "reject"
)

// Errors. Every error this package returns matches one of them with
// errors.Is.
var (
	// ErrInvalidPolicy: the policy file cannot be used; the error is a
	// *PolicyError saying where.
	ErrInvalidPolicy = errors.New("hookpolicy: invalid policy")
	// ErrUnknownHook: Evaluate was asked about a hook id the protocol does
	// not define.
	ErrUnknownHook = errors.New("hookpolicy: unknown hook")
	// ErrInvalidInput: the hook input is not a JSON object of the hook's
	// shape.
	ErrInvalidInput = errors.New("hookpolicy: invalid hook input")
)

// PolicyError locates a problem in a policy.
type PolicyError struct {
	// Rule is the 1-based index of the rule at fault, 0 for the policy's
	// own fields.
	Rule  int
	Field string
	Err   error
}

func (e *PolicyError) Error() string {
	where := "policy"
	if e.Rule > 0 {
		where = fmt.Sprintf("rule %d", e.Rule)
	}
	if e.Field != "" {
		where += " " + e.Field
	}
	return fmt.Sprintf("hookpolicy: invalid policy: %s: %v", where, e.Err)
}

func (e *PolicyError) Unwrap() []error { return []error{ErrInvalidPolicy, e.Err} }

// Policy is the policy file's content (JSON; unknown members are errors).
type Policy struct {
	// Default applies when no rule matches (default: continue).
	Default DefaultDecision `json:"default"`
	// Rules are tried in order; the first that matches decides.
	Rules []Rule `json:"rules"`
	// PathKeys are the member names whose string values (anywhere in a
	// hook's input) are paths for Rule.Paths; default DefaultPathKeys.
	PathKeys []string `json:"path_keys,omitzero"`
}

// DefaultDecision is the decision when no rule matches.
type DefaultDecision struct {
	Decision Action `json:"decision"`
	Reason   string `json:"reason,omitzero"`
}

// DefaultPathKeys are the input members read as paths when a policy names
// none.
var DefaultPathKeys = []string{"path", "paths", "file", "files", "file_path", "filepath", "filename", "dir", "directory",
	"cwd", "target", "source", "destination", "document", "root"}

// Rule is one policy rule. Its conditions — Hooks, Tools, Paths, Patterns
// and Fields — must all hold (a list holds when any of its entries does;
// an absent condition always holds). A matching rule decides: Reject with
// Reason, or Continue, optionally changing the hook's input through the
// patch actions that apply to the hook at hand.
type Rule struct {
	// ID names the rule in reasons (default "rule-<n>").
	ID string `json:"id,omitzero"`
	// Hooks the rule applies to (default: all).
	Hooks []HookID `json:"hooks,omitzero"`
	// Tools are glob patterns ("*" any run, "?" one character) for the
	// tool of before_tool_call and the candidates of before_tool_selection;
	// the rule only matches hooks that have tools.
	Tools []string `json:"tools,omitzero"`
	// Paths are glob patterns for paths found in the input ("**" any
	// number of segments, "*" and "?" within a segment), matched after
	// cleaning ("a/./b/../c" is "a/c").
	Paths []string `json:"paths,omitzero"`
	// Patterns are regular expressions (RE2) tried against every string
	// value of the input.
	Patterns []string `json:"patterns,omitzero"`
	// Fields maps dot paths into the input to glob patterns for the value
	// found there (strings as they are, numbers and booleans as JSON); all
	// must match.
	Fields map[string]string `json:"fields,omitzero"`

	Decision Action `json:"decision"`
	// Reason is the rejection's message (default: says which rule and
	// what matched).
	Reason string `json:"reason,omitzero"`

	// Patch actions, for Continue rules.
	//
	// Redact replaces each match of these regular expressions (or, in an
	// expression with capturing groups, what the groups capture) with
	// "[REDACTED]" in what the hook may patch: before_tool_call arguments,
	// before_memory_write content, before_knowledge_request and
	// before_memory_read query, after_knowledge_retrieval content and
	// result texts.
	Redact []string `json:"redact,omitzero"`
	// RemoveTools drops the before_tool_selection candidates matching
	// these globs.
	RemoveTools []string `json:"remove_tools,omitzero"`
	// ContextSections and ProviderOptions are added to before_model_request.
	ContextSections []Section      `json:"context_sections,omitzero"`
	ProviderOptions jsontext.Value `json:"provider_options,omitzero"`
	// MaxTopK caps before_knowledge_request's top_k, MaxLimit
	// before_memory_read's limit (an absent value is set to the cap).
	MaxTopK  *int64 `json:"max_top_k,omitzero"`
	MaxLimit *int64 `json:"max_limit,omitzero"`
	// ModelGuidance is given to before_memory_operation.
	ModelGuidance string `json:"model_guidance,omitzero"`
}

// Section is a context section a before_model_request patch appends.
type Section struct {
	Title   string `json:"title"`
	Content string `json:"content"`
}

// Load reads a policy file (see Parse).
func Load(path string) (*Engine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes a JSON policy, rejecting unknown members, and compiles
// it.
func Parse(data []byte) (*Engine, error) {
	var p Policy
	if err := json.Unmarshal(data, &p, json.RejectUnknownMembers(true)); err != nil {
		return nil, &PolicyError{Err: err}
	}
	return New(p)
}

// which hooks each patch action applies to.
var actionHooks = map[string][]HookID{
	"redact":           {BeforeToolCall, BeforeMemoryWrite, BeforeKnowledgeRequest, BeforeMemoryRead, AfterKnowledgeRetrieval},
	"remove_tools":     {BeforeToolSelection},
	"context_sections": {BeforeModelRequest},
	"provider_options": {BeforeModelRequest},
	"max_top_k":        {BeforeKnowledgeRequest},
	"max_limit":        {BeforeMemoryRead},
	"model_guidance":   {BeforeMemoryOperation},
}

// New compiles a policy. Every rule is checked: decisions, hook ids,
// globs, regular expressions, and that each patch action can apply to at
// least one of the rule's hooks.
func New(p Policy) (*Engine, error) {
	e := &Engine{def: p.Default, pathKeys: map[string]bool{}}
	switch e.def.Decision {
	case "":
		e.def.Decision = Continue
	case Continue, Reject:
	default:
		return nil, &PolicyError{Field: "default.decision", Err: fmt.Errorf("%q is neither continue nor reject", e.def.Decision)}
	}
	keys := p.PathKeys
	if len(keys) == 0 {
		keys = DefaultPathKeys
	}
	for _, k := range keys {
		e.pathKeys[k] = true
	}
	ids := map[string]int{}
	for i, r := range p.Rules {
		n := i + 1
		c, err := compileRule(n, r)
		if err != nil {
			return nil, err
		}
		if prev, dup := ids[c.ID]; dup {
			return nil, &PolicyError{Rule: n, Field: "id", Err: fmt.Errorf("%q already names rule %d", c.ID, prev)}
		}
		ids[c.ID] = n
		e.rules = append(e.rules, c)
	}
	return e, nil
}

type compiled struct {
	Rule
	hooks    map[HookID]bool
	patterns []*regexp.Regexp
	redact   []*regexp.Regexp
}

func compileRule(n int, r Rule) (*compiled, error) {
	bad := func(field string, err error) error { return &PolicyError{Rule: n, Field: field, Err: err} }
	c := &compiled{Rule: r}
	if c.ID == "" {
		c.ID = fmt.Sprintf("rule-%d", n)
	}
	switch r.Decision {
	case Continue, Reject:
	case "":
		return nil, bad("decision", errors.New("missing (continue or reject)"))
	default:
		return nil, bad("decision", fmt.Errorf("%q is neither continue nor reject", r.Decision))
	}
	if len(r.Hooks) > 0 {
		c.hooks = map[HookID]bool{}
		for _, h := range r.Hooks {
			if !knownHook(h) {
				return nil, bad("hooks", fmt.Errorf("unknown hook %q", h))
			}
			c.hooks[h] = true
		}
	}
	for _, g := range append(append(slicesClone(r.Tools), r.RemoveTools...), r.Paths...) {
		if g == "" {
			return nil, bad("glob", errors.New("empty pattern"))
		}
	}
	for _, g := range r.Fields {
		if g == "" {
			return nil, bad("fields", errors.New("empty pattern"))
		}
	}
	var err error
	if c.patterns, err = compileAll(r.Patterns); err != nil {
		return nil, bad("patterns", err)
	}
	if c.redact, err = compileAll(r.Redact); err != nil {
		return nil, bad("redact", err)
	}
	for _, s := range r.ContextSections {
		if strings.TrimSpace(s.Title) == "" || strings.TrimSpace(s.Content) == "" {
			return nil, bad("context_sections", errors.New("a section needs a non-empty title and content"))
		}
	}
	if len(r.ProviderOptions) > 0 && r.ProviderOptions.Kind() != '{' {
		return nil, bad("provider_options", errors.New("must be an object"))
	}
	if r.MaxTopK != nil && *r.MaxTopK < 0 || r.MaxLimit != nil && *r.MaxLimit < 0 {
		return nil, bad("max", errors.New("negative cap"))
	}
	actions := map[string]bool{
		"redact": len(r.Redact) > 0, "remove_tools": len(r.RemoveTools) > 0, "context_sections": len(r.ContextSections) > 0,
		"provider_options": len(r.ProviderOptions) > 0, "max_top_k": r.MaxTopK != nil, "max_limit": r.MaxLimit != nil,
		"model_guidance": r.ModelGuidance != "",
	}
	for name, set := range actions {
		if !set {
			continue
		}
		if r.Decision == Reject {
			return nil, bad(name, errors.New("a reject rule cannot patch"))
		}
		if c.hooks == nil {
			continue
		}
		applies := false
		for _, h := range actionHooks[name] {
			applies = applies || c.hooks[h]
		}
		if !applies {
			return nil, bad(name, fmt.Errorf("applies to none of the rule's hooks %v", r.Hooks))
		}
	}
	return c, nil
}

func compileAll(exprs []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, x := range exprs {
		re, err := regexp.Compile(x)
		if err != nil {
			return nil, err
		}
		out = append(out, re)
	}
	return out, nil
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
