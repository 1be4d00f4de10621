package hookpolicy

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Patch is a hook's typed patch: one of the pointer types below, each
// marshalling to the patch object its hook accepts (members the policy
// did not change are left out).
type Patch interface{ hook() HookID }

// ModelRequestPatch patches before_model_request: sections appended to the
// run context, options merged into the model's.
type ModelRequestPatch struct {
	ContextSections []Section      `json:"context_sections,omitzero"`
	ProviderOptions jsontext.Value `json:"provider_options,omitzero"`
}

// ToolSelectionPatch patches before_tool_selection: the candidates kept,
// in their order (possibly none).
type ToolSelectionPatch struct {
	CandidateIDs []string `json:"candidate_ids"`
}

// ToolCallPatch patches before_tool_call: replacement arguments.
type ToolCallPatch struct {
	Arguments jsontext.Value `json:"arguments"`
}

// KnowledgeRequestPatch patches before_knowledge_request.
type KnowledgeRequestPatch struct {
	Query *string `json:"query,omitzero"`
	TopK  *int64  `json:"top_k,omitzero"`
}

// KnowledgeResultPatch patches after_knowledge_retrieval.
type KnowledgeResultPatch struct {
	Content *string      `json:"content,omitzero"`
	Results []ResultText `json:"results,omitzero"`
}

// ResultText is a retrieval result's replacement text.
type ResultText struct {
	ChunkID  string  `json:"chunk_id"`
	SourceID string  `json:"source_id"`
	Text     *string `json:"text,omitzero"`
}

// MemoryReadPatch patches before_memory_read.
type MemoryReadPatch struct {
	Query *string `json:"query,omitzero"`
	Limit *int64  `json:"limit,omitzero"`
}

// MemoryWritePatch patches before_memory_write: replacement content.
type MemoryWritePatch struct {
	Content jsontext.Value `json:"content"`
}

// MemoryOperationPatch patches before_memory_operation.
type MemoryOperationPatch struct {
	ModelGuidance string `json:"model_guidance"`
}

func (*ModelRequestPatch) hook() HookID     { return BeforeModelRequest }
func (*ToolSelectionPatch) hook() HookID    { return BeforeToolSelection }
func (*ToolCallPatch) hook() HookID         { return BeforeToolCall }
func (*KnowledgeRequestPatch) hook() HookID { return BeforeKnowledgeRequest }
func (*KnowledgeResultPatch) hook() HookID  { return AfterKnowledgeRetrieval }
func (*MemoryReadPatch) hook() HookID       { return BeforeMemoryRead }
func (*MemoryWritePatch) hook() HookID      { return BeforeMemoryWrite }
func (*MemoryOperationPatch) hook() HookID  { return BeforeMemoryOperation }

// Redacted replaces what Rule.Redact matches.
const Redacted = "[REDACTED]"

// patch builds the rule's patch for hook, or nil when it changes nothing.
func (r *compiled) patch(hook HookID, in map[string]any) (Patch, error) {
	switch hook {
	case BeforeModelRequest:
		if len(r.ContextSections) == 0 && len(r.ProviderOptions) == 0 {
			return nil, nil
		}
		return &ModelRequestPatch{ContextSections: r.ContextSections, ProviderOptions: r.ProviderOptions}, nil

	case BeforeToolSelection:
		if len(r.RemoveTools) == 0 {
			return nil, nil
		}
		cands, _ := in["candidates"].([]any)
		kept, removed := []string{}, false
		for _, c := range cands {
			m, _ := c.(map[string]any)
			id, ok := m["canonical_id"].(string)
			if !ok {
				return nil, fmt.Errorf("%w: before_tool_selection candidate without canonical_id", ErrInvalidInput)
			}
			if _, hit := firstGlob("tool", r.RemoveTools, []string{id}, wildcard); hit {
				removed = true
				continue
			}
			kept = append(kept, id)
		}
		if !removed {
			return nil, nil
		}
		return &ToolSelectionPatch{CandidateIDs: kept}, nil

	case BeforeToolCall:
		raw, err := redactJSON(in["arguments"], r.redact)
		if raw == nil || err != nil {
			return nil, err
		}
		return &ToolCallPatch{Arguments: raw}, nil

	case BeforeMemoryWrite:
		raw, err := redactJSON(in["content"], r.redact)
		if raw == nil || err != nil {
			return nil, err
		}
		return &MemoryWritePatch{Content: raw}, nil

	case BeforeKnowledgeRequest:
		req, _ := in["request"].(map[string]any)
		p := &KnowledgeRequestPatch{}
		if q, ok := req["query"].(string); ok {
			if red, changed := redactString(q, r.redact); changed {
				p.Query = &red
			}
		}
		p.TopK = capped(req["top_k"], r.MaxTopK)
		if p.Query == nil && p.TopK == nil {
			return nil, nil
		}
		return p, nil

	case BeforeMemoryRead:
		p := &MemoryReadPatch{}
		if q, ok := in["query"].(string); ok {
			if red, changed := redactString(q, r.redact); changed {
				p.Query = &red
			}
		}
		p.Limit = capped(in["limit"], r.MaxLimit)
		if p.Query == nil && p.Limit == nil {
			return nil, nil
		}
		return p, nil

	case AfterKnowledgeRetrieval:
		res, _ := in["result"].(map[string]any)
		p := &KnowledgeResultPatch{}
		if c, ok := res["content"].(string); ok {
			if red, changed := redactString(c, r.redact); changed {
				p.Content = &red
			}
		}
		results, _ := res["results"].([]any)
		redacted := false
		texts := make([]ResultText, 0, len(results))
		for _, x := range results {
			m, _ := x.(map[string]any)
			chunk, _ := m["chunk_id"].(string)
			source, _ := m["source_id"].(string)
			rt := ResultText{ChunkID: chunk, SourceID: source}
			if t, ok := m["text"].(string); ok {
				red, changed := redactString(t, r.redact)
				redacted = redacted || changed
				rt.Text = &red
			}
			texts = append(texts, rt)
		}
		if redacted {
			// Every result, in order, so that a Harness replacing the list
			// loses none.
			p.Results = texts
		}
		if p.Content == nil && p.Results == nil {
			return nil, nil
		}
		return p, nil

	case BeforeMemoryOperation:
		if r.ModelGuidance == "" {
			return nil, nil
		}
		return &MemoryOperationPatch{ModelGuidance: r.ModelGuidance}, nil
	}
	return nil, nil
}

// capped returns max when v is absent or above it.
func capped(v any, max *int64) *int64 {
	if max == nil {
		return nil
	}
	if f, ok := v.(float64); ok && f <= float64(*max) {
		return nil
	}
	m := *max
	return &m
}

// redactString replaces each match of each expression with Redacted; when
// an expression has capturing groups, only what they capture is replaced
// ("(?i)api_key=(\S+)" keeps "api_key=").
func redactString(s string, res []*regexp.Regexp) (string, bool) {
	out := s
	for _, re := range res {
		if re.NumSubexp() == 0 {
			out = re.ReplaceAllLiteralString(out, Redacted)
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range re.FindAllStringSubmatchIndex(out, -1) {
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] < 0 || m[g] < last {
					continue // unmatched or nested in a group already replaced
				}
				b.WriteString(out[last:m[g]])
				b.WriteString(Redacted)
				last = m[g+1]
			}
		}
		b.WriteString(out[last:])
		out = b.String()
	}
	return out, out != s
}

// redactJSON returns v redacted as JSON (members sorted), or nil when
// redaction changes nothing.
func redactJSON(v any, res []*regexp.Regexp) (jsontext.Value, error) {
	red, changed := redact(v, res)
	if !changed {
		return nil, nil
	}
	return json.Marshal(red, json.Deterministic(true))
}

// redact returns v with every string value (not member names) redacted,
// and whether anything changed.
func redact(v any, res []*regexp.Regexp) (any, bool) {
	if len(res) == 0 {
		return v, false
	}
	switch x := v.(type) {
	case string:
		return redactString(x, res)
	case []any:
		out, changed := make([]any, len(x)), false
		for i, el := range x {
			var c bool
			out[i], c = redact(el, res)
			changed = changed || c
		}
		return out, changed
	case map[string]any:
		out, changed := make(map[string]any, len(x)), false
		for k, el := range x {
			var c bool
			out[k], c = redact(el, res)
			changed = changed || c
		}
		return out, changed
	}
	return v, false
}
