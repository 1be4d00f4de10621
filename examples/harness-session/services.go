package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/clients/harness"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// docsPackage is the Knowledge package the session's model asks.
const docsPackage = "@local/docs"

// passage is one section of a Markdown file: a heading and its text.
type passage struct {
	id, source, title, text string
	words                   map[string]bool
}

// docs is a knowledge host service over a folder of Markdown files: a
// vector_query ranks sections by the query's words they contain, a
// context_document returns a whole file.
type docs struct {
	root     string // how sources are named in citations
	passages []passage
	files    map[string]string
}

// loadDocs reads every .md file of fsys, split at its headings; root names
// the folder in citations.
func loadDocs(fsys fs.FS, root string) (*docs, error) {
	d := &docs{root: root, files: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.EqualFold(filepath.Ext(path), ".md") {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		d.files[path] = string(data)
		d.split(path, string(data))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	if len(d.passages) == 0 {
		return nil, fmt.Errorf("docs: no Markdown under %s", root)
	}
	return d, nil
}

func (d *docs) split(source, text string) {
	title, body := "", []string{}
	flush := func() {
		t := strings.TrimSpace(strings.Join(body, "\n"))
		if t == "" {
			return
		}
		n := len(d.passages)
		d.passages = append(d.passages, passage{id: fmt.Sprintf("%s#%d", source, n), source: source, title: title, text: t, words: words(title + " " + t)})
	}
	for _, line := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			flush()
			title, body = strings.TrimSpace(strings.TrimLeft(h, "#")), nil
			continue
		}
		body = append(body, line)
	}
	flush()
}

// stop lists words too common to rank by.
var stop = map[string]bool{"the": true, "and": true, "for": true, "when": true, "what": true, "how": true, "does": true, "with": true, "from": true, "this": true, "that": true, "are": true, "our": true, "its": true, "not": true, "why": true}

// words returns the distinct lower-case words of s, of three letters or
// more, without the common ones.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }) {
		if len(w) >= 3 && !stop[w] {
			out[strings.Trim(w, "-")] = true
		}
	}
	return out
}

// retrieve answers the retrieve method.
func (d *docs) retrieve(_ context.Context, p *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
	r := p.Request
	res := &agentpmservice.KnowledgeRuntimeResult{Package: r.Package, Version: r.Version, Mode: r.Mode, Document: r.Document, Query: r.Query}
	fail := func(code, msg string) (*agentpmservice.KnowledgeRuntimeResult, error) {
		res.Error = &agentpmservice.KnowledgeRuntimeFailure{Code: code, Message: msg}
		return res, nil
	}
	switch r.Mode {
	case agentpmservice.KnowledgeRequestModeContextDocument:
		if r.Document == nil {
			return fail("missing_document", "context_document needs a document")
		}
		text, ok := d.files[*r.Document]
		if !ok {
			return fail("missing_document", fmt.Sprintf("no document %q", *r.Document))
		}
		res.Ok, res.Content = true, &text
		return res, nil
	case agentpmservice.KnowledgeRequestModeVectorQuery:
	default:
		return fail("unsupported_mode", fmt.Sprintf("mode %q", r.Mode))
	}
	if r.Query == nil {
		return fail("missing_query", "vector_query needs a query")
	}
	q := words(*r.Query)
	if len(q) == 0 {
		return fail("empty_query", "the query has no words to search for")
	}
	type hit struct {
		p     *passage
		score float64
	}
	var hits []hit
	for i := range d.passages {
		p := &d.passages[i]
		n := 0
		for w := range q {
			if p.words[w] {
				n++
			}
		}
		score := float64(n) / float64(len(q))
		if n > 0 && (r.ScoreThreshold == nil || score >= *r.ScoreThreshold) {
			hits = append(hits, hit{p, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.p.id, b.p.id)
	})
	k := 3
	if r.TopK != nil && *r.TopK > 0 {
		k = int(*r.TopK)
	}
	res.Ok = true
	res.Results, res.Citations = []agentpmservice.KnowledgeRetrievalResult{}, []agentpmservice.KnowledgeCitation{}
	for i, h := range hits[:min(k, len(hits))] {
		p := h.p
		uri := d.root + "/" + p.source
		res.Results = append(res.Results, agentpmservice.KnowledgeRetrievalResult{Rank: int64(i + 1), Score: h.score, ChunkID: p.id, SourceID: p.source,
			SourceTitle: &p.title, SourceURI: &uri, Text: &p.text})
		if r.ReturnCitations == nil || *r.ReturnCitations {
			res.Citations = append(res.Citations, agentpmservice.KnowledgeCitation{ChunkID: p.id, SourceID: p.source, Title: &p.title, URI: &uri})
		}
	}
	return res, nil
}

// planner is the session's model: its first turn asks the docs for the
// Run input, its next answers from the passages found (or says it found
// none). A real session registers a model that calls an LLM here.
func planner(_ context.Context, p *agentpmservice.GeneratePayload) (*agentpmservice.ModelTurn, error) {
	req := &p.Request
	var found *agentpmservice.KnowledgeRuntimeResult
	for _, t := range req.OrderedTurns {
		if t.Kind != agentpmservice.ModelTurnKindSemanticActionResult {
			continue
		}
		raw, ok := t.Extra.Get("result")
		if !ok {
			continue
		}
		var r agentpmservice.KnowledgeRuntimeResult
		if err := json.Unmarshal(raw, &r); err == nil {
			found = &r
		}
	}
	in := int64(len(strings.Fields(req.RunInput)) + 40*len(req.OrderedTurns))
	if found == nil {
		q := req.RunInput
		out := int64(12)
		return &agentpmservice.ModelTurn{
			AssistantContent: wire.Some("Let me look that up in the docs."),
			Actions: []agentpmservice.SemanticActionProposal{{ID: "search-1", Action: agentpmservice.SemanticAction{
				KnowledgeRequest: &agentpmservice.SemanticActionKnowledgeRequest{Package: docsPackage, Query: &q}}}},
			Usage: usage(in, out), FinishReason: wire.Some("tool_use"),
		}, nil
	}
	answer := map[string]any{"question": req.RunInput}
	var sources []string
	var parts []string
	if found.Ok {
		for _, r := range found.Results {
			parts = append(parts, firstSentence(*r.Text))
			sources = append(sources, *r.SourceTitle+" ("+r.SourceID+")")
		}
	}
	if len(parts) == 0 {
		msg := "The docs say nothing about this."
		if found.Error != nil {
			msg += " (" + found.Error.Code + ": " + found.Error.Message + ")"
		}
		parts = []string{msg}
	}
	answer["answer"] = strings.Join(parts, " ")
	answer["sources"] = sources
	out, err := json.Marshal(answer, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return &agentpmservice.ModelTurn{
		AssistantContent: wire.Some(fmt.Sprintf("Answering from %d passage(s).", len(sources))),
		Actions: []agentpmservice.SemanticActionProposal{{ID: "answer-1", Action: agentpmservice.SemanticAction{
			PhaseCompletion: &agentpmservice.SemanticActionPhaseCompletion{Outcome: wire.Null[string](), Output: out}}}},
		Usage: usage(in, int64(len(strings.Fields(answer["answer"].(string))))), FinishReason: wire.Some("stop"),
	}, nil
}

func usage(in, out int64) *agentpmservice.RunUsage {
	return &agentpmservice.RunUsage{ModelCalls: new(int64(1)), Tokens: &agentpmservice.TokenUsage{
		InputTokens: wire.Some(in), OutputTokens: wire.Some(out), TotalTokens: wire.Some(in + out)}}
}

// firstSentence returns the first sentence of a passage, on one line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// queryPolicy is a before_knowledge_request hook: queries are trimmed of
// punctuation and whitespace, and ask for at most three passages; an
// empty query is rejected.
func queryPolicy(_ context.Context, h *agentpmservice.BeforeKnowledgeRequestHook) (*agentpmservice.BeforeKnowledgeRequestDecision, error) {
	r := h.Input.Request
	if r.Query == nil || strings.TrimSpace(*r.Query) == "" {
		return &agentpmservice.BeforeKnowledgeRequestDecision{Reject: &agentpmservice.HookReject{Reason: new("empty queries are not sent to the docs")}}, nil
	}
	q := strings.Join(strings.Fields(strings.TrimRight(*r.Query, "?!. ")), " ")
	top := int64(3)
	if r.TopK != nil && *r.TopK < top {
		top = *r.TopK
	}
	return &agentpmservice.BeforeKnowledgeRequestDecision{Continue: &agentpmservice.BeforeKnowledgeRequestDecisionContinue{
		Patch: &agentpmservice.BeforeKnowledgeRequestPatch{Query: &q, TopK: &top}}}, nil
}

// services returns the host services of the session, each call reported
// to show.
func services(d *docs, approve bool, show *display) []harness.HostService {
	timed := func(role, method string, start time.Time, err *error) {
		show.hostCall(role, method, time.Since(start), *err)
	}
	model := &agentpmservice.ServiceHandlers{Generate: func(ctx context.Context, p *agentpmservice.GeneratePayload) (t *agentpmservice.ModelTurn, err error) {
		defer timed("model", "generate", time.Now(), &err)
		return planner(ctx, p)
	}}
	knowledge := &agentpmservice.ServiceHandlers{Retrieve: func(ctx context.Context, p *agentpmservice.RetrievePayload) (r *agentpmservice.KnowledgeRuntimeResult, err error) {
		defer timed("knowledge", "retrieve", time.Now(), &err)
		return d.retrieve(ctx, p)
	}}
	hooks := &agentpmservice.ServiceHandlers{BeforeKnowledgeRequest: func(ctx context.Context, h *agentpmservice.BeforeKnowledgeRequestHook) (dec *agentpmservice.BeforeKnowledgeRequestDecision, err error) {
		defer timed("hook", "before_knowledge_request", time.Now(), &err)
		return queryPolicy(ctx, h)
	}}
	approval := &agentpmservice.ServiceHandlers{RequestApproval: func(_ context.Context, p *agentpmservice.RequestApprovalPayload) (*agentpmservice.ApprovalDecision, error) {
		d := agentpmservice.ApprovalDecisionValueApprove
		if !approve {
			d = agentpmservice.ApprovalDecisionValueDeny
		}
		show.note("checkpoint %s before phase %s: %s", p.Checkpoint.ID, p.Checkpoint.BeforePhase, d)
		return &agentpmservice.ApprovalDecision{Decision: &d}, nil
	}}
	return []harness.HostService{
		{Role: agentpmservice.ServiceRoleModel, RegistryID: "default", Handlers: model,
			Capabilities: map[string]any{"semantic_actions": true, "structured_output": true}},
		{Role: agentpmservice.ServiceRoleKnowledge, RegistryID: "docs", Handlers: knowledge,
			Capabilities: map[string]any{"modes": []string{"context_document", "vector_query"}, "features": []string{"citations"}}},
		{Role: agentpmservice.ServiceRoleHook, RegistryID: "query-policy", Handlers: hooks},
		{Role: agentpmservice.ServiceRoleApproval, RegistryID: "controller", Handlers: approval},
	}
}
