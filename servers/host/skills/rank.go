package skills

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/servers/host/permission"
)

// BM25 parameters, and how many times a field's words count.
const (
	bm25K1 = 1.2
	bm25B  = 0.75

	weightName        = 3
	weightDescription = 2
	weightWhenToUse   = 2
	weightBody        = 1

	// pathBonus is added to a skill's score when one of the prompt's
	// working files matches one of its path patterns.
	pathBonus = 1.0

	// maxPathWork bounds the segment matches that matching working files
	// against path patterns may take in one Rank: the runtime sends both
	// lists, and every pattern meets every file. Past it, the candidates
	// left get no path bonus.
	maxPathWork = 1 << 24
)

// Rank ranks the candidates for the prompt with Okapi BM25 over each
// candidate's name, description, when_to_use and, for a skill this host
// also has, its body; a working file matching a candidate's paths adds
// pathBonus. It returns the candidates that scored, best first (ties by
// name), with scores rounded to 4 decimals: the same request always gets
// the same answer. It takes time linear in the request's size, except that
// path matching may take up to maxPathWork segment matches.
func Rank(p *harn.SkillMatchParams, skills *Set) []Ranked {
	type doc struct {
		name  string
		tf    map[string]int
		len   int
		paths []string
	}
	docs := make([]doc, 0, len(p.Candidates))
	seen := map[string]bool{}
	for _, c := range p.Candidates {
		if c.Name == "" || seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		d := doc{name: c.Name, tf: map[string]int{}, paths: c.Paths}
		add := func(text string, weight int) {
			for _, w := range words(text) {
				d.tf[w] += weight
				d.len += weight
			}
		}
		add(c.Name, weightName)
		add(c.Description, weightDescription)
		add(c.WhenToUse, weightWhenToUse)
		if s, ok := skills.ByName[c.Name]; ok {
			add(s.Body, weightBody)
			if len(d.paths) == 0 {
				d.paths = s.Paths
			}
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return []Ranked{}
	}
	avg := 0.0
	for _, d := range docs {
		avg += float64(d.len)
	}
	avg /= float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	// Only the stems some candidate has can score. Each doc is scored by
	// its own terms, in prompt order: time linear in the prompt and the
	// candidates, however many distinct words either has.
	df := map[string]int{}
	for _, d := range docs {
		for w := range d.tf {
			df[w]++
		}
	}
	var query []string           // unique stems some candidate has, in prompt order
	place := map[string]int{}    // stem -> its index in query
	shown := map[string]string{} // stem -> the prompt's first word for it
	for _, w := range strings.FieldsFunc(p.Prompt, notWordRune) {
		for _, s := range words(w) {
			if _, ok := place[s]; ok || df[s] == 0 {
				continue
			}
			place[s] = len(query)
			query = append(query, s)
			shown[s] = strings.ToLower(w)
		}
	}
	n := float64(len(docs))
	out := []Ranked{}
	var hits []int
	pathWork := maxPathWork
	for _, d := range docs {
		score := 0.0
		var matched []string
		hits = hits[:0]
		for w := range d.tf {
			if i, ok := place[w]; ok {
				hits = append(hits, i)
			}
		}
		slices.Sort(hits)
		for _, i := range hits {
			w := query[i]
			tf := float64(d.tf[w]) // above 0: every term of d.tf was counted with a positive weight
			idf := math.Log(1 + (n-float64(df[w])+0.5)/(float64(df[w])+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.len)/avg))
			matched = append(matched, shown[w])
		}
		var reasons []string
		if len(matched) > 0 {
			if len(matched) > 5 {
				matched = append(matched[:5], "…")
			}
			reasons = append(reasons, "bm25 on "+strings.Join(matched, ", "))
		}
		if pat, file, ok := pathMatch(d.paths, p.WorkingFiles, &pathWork); ok {
			score += pathBonus
			reasons = append(reasons, fmt.Sprintf("%s matches %s", file, pat))
		}
		if score <= 0 {
			continue
		}
		out = append(out, Ranked{Name: d.name, Score: math.Round(score*1e4) / 1e4, Reason: strings.Join(reasons, "; ")})
	}
	slices.SortStableFunc(out, func(a, b Ranked) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Ranked is a candidate that scored.
type Ranked struct {
	Name   string
	Score  float64
	Reason string
}

// pathMatch finds the first working file that one of the patterns matches,
// taking the segment matches it may make from budget.
func pathMatch(patterns, files []string, budget *int) (pattern, file string, ok bool) {
	for _, pat := range patterns {
		segs := strings.Count(pat, "/") + 1
		for _, f := range files {
			name := strings.TrimPrefix(f, "./")
			if *budget -= segs * (strings.Count(name, "/") + 1); *budget < 0 {
				return "", "", false
			}
			if permission.Glob(pat, name) {
				return pat, f, true
			}
		}
	}
	return "", "", false
}

// stopWords are left out of the ranking.
var stopWords = map[string]bool{}

func init() {
	for w := range strings.FieldsSeq(`a an and are as at be but by can do for from has have how i if in into is it its
		me my of on or our please so that the their then there these this to up us use user was we what when where which
		while who will with would you your`) {
		stopWords[w] = true
	}
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// words splits text into lower-case, stemmed words, without stop words.
func words(text string) []string {
	var out []string
	for f := range strings.FieldsFuncSeq(strings.ToLower(text), notWordRune) {
		if len(f) < 2 || stopWords[f] {
			continue
		}
		out = append(out, stem(f))
	}
	return out
}

// stem strips common English suffixes so that "ship", "ships", "shipped"
// and "shipping" are one word: a light, deterministic stemmer, not
// Porter's.
func stem(w string) string {
	cut := func(suffix, repl string, min int) bool {
		if len(w) < min || !strings.HasSuffix(w, suffix) {
			return false
		}
		w = w[:len(w)-len(suffix)] + repl
		return true
	}
	switch {
	case cut("ations", "ate", 8), cut("ation", "ate", 7), cut("ments", "", 10), cut("ment", "", 9), cut("ies", "y", 5):
	case cut("ing", "", 5), cut("ed", "", 5):
		// shipp -> ship, but not fall -> fal or pass -> pas.
		if n := len(w); n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
			w = w[:n-1]
		}
	case strings.HasSuffix(w, "ss"):
	case len(w) >= 5 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") ||
		strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes") || strings.HasSuffix(w, "sses")):
		w = w[:len(w)-2]
	case cut("s", "", 4):
	}
	// release, released, releasing -> releas.
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}
