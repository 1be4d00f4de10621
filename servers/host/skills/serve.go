package skills

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/runtime/wire"
)

// Register serves s on h: skills/list, skills/fetch and skill/match (Rank;
// onMatch, when set, is told each answer). A Set without a folder
// registers nothing, so those methods are answered -32601.
func (s *Set) Register(h *harn.HostHandlers, onMatch func(*harn.SkillMatchParams, []Ranked)) {
	if s == nil || s.Dir == "" {
		return
	}
	h.SkillsList = s.ListRefs
	h.SkillsFetch = s.Fetch
	h.SkillMatch = func(ctx context.Context, p *harn.SkillMatchParams) (*harn.SkillMatchResult, error) {
		ranked := Rank(p, s)
		if onMatch != nil {
			onMatch(p, ranked)
		}
		return MatchResult(ranked), nil
	}
}

// ListRefs serves skills/list: the seed's bare array of {id, name,
// description, source: "host"}, by id.
func (s *Set) ListRefs(context.Context, *harn.NoArgs) (*harn.SkillsListResult, error) {
	out := make([]harn.SkillManifestRef, 0, len(s.List))
	for _, sk := range s.List {
		out = append(out, harn.SkillManifestRef{ID: new(sk.ID), Name: new(sk.Name), Description: new(sk.Description), Source: new("host")})
	}
	return &harn.SkillsListResult{List: out}, nil
}

// Fetch serves skills/fetch: the skill with its manifest nested (the front
// matter's other keys in it, sorted); an unknown id is -32602.
func (s *Set) Fetch(_ context.Context, p *harn.SkillsFetchParams) (*harn.Skill, error) {
	sk, ok := s.ByID[p.ID]
	if !ok {
		return nil, rpc.NewError(rpc.CodeInvalidParams, fmt.Sprintf("skills/fetch: no skill %q", p.ID), map[string]string{"id": p.ID})
	}
	m := &harn.SkillManifest{WhenToUse: new(sk.WhenToUse), AllowedTools: sk.AllowedTools, Paths: sk.Paths}
	for _, k := range slices.Sorted(maps.Keys(sk.Extra)) {
		m.Extra = append(m.Extra, wire.Member{Name: k, Value: sk.Extra[k]})
	}
	if sk.Model != "" {
		m.Model = new(sk.Model)
	}
	if m.AllowedTools == nil {
		m.AllowedTools = []string{}
	}
	if m.Paths == nil {
		m.Paths = []string{}
	}
	return &harn.Skill{Name: new(sk.Name), Description: new(sk.Description), Body: new(sk.Body), Manifest: m}, nil
}

// MatchResult is skill/match's answer for ranked, in the canonical
// {matches: [...]} shape.
func MatchResult(ranked []Ranked) *harn.SkillMatchResult {
	matches := make([]harn.SkillMatch, 0, len(ranked))
	for _, m := range ranked {
		matches = append(matches, harn.SkillMatch{Name: m.Name, Score: new(m.Score), Reason: new(m.Reason)})
	}
	return &harn.SkillMatchResult{Object: &harn.SkillMatchResultObject{SkillMatches: &harn.SkillMatches{Matches: matches}}}
}
