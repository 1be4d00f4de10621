package embedding

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
)

func mustNew(t testing.TB, cfg Config) *Encoder {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// digest pins a vector bit for bit.
func digest(v []float64) string {
	h := sha256.New()
	for _, x := range v {
		h.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(x)))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// The algorithm is pinned: a change to tokenising, hashing or weighting
// changes stored vectors' meaning and must come with a new Model name.
func TestGolden(t *testing.T) {
	e := mustNew(t, Config{})
	for text, want := range map[string]string{
		"How does Harness route Knowledge?": "afd2c3af354559d2",
		"":                                  "1d0da77a7ec750e8",
		"?!":                                "f5682de0fb554591",
		"to be or not to be":                "ba63d94886983be1",
	} {
		if got := digest(e.Embed(text)); got != want {
			t.Errorf("Embed(%q) digest %s, want %s", text, got, want)
		}
	}
}

func TestUnitLengthAndFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", " ", "\t\n", "?!", "🙂", "a", "the", "KnowledgeRuntime", strings.Repeat("x", 10000),
		"\xff\xfe", "検索エンジン", "top_k=3"}
	for range 200 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, dims := range []int{1, 2, 3, 64, 256, 1000} {
		e := mustNew(t, Config{Dimensions: dims})
		for _, text := range texts {
			v := e.Embed(text)
			if len(v) != dims {
				t.Fatalf("dims %d: len %d", dims, len(v))
			}
			for _, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("dims %d, %q: non-finite %v", dims, text, x)
				}
			}
			// The protocol accepts |L2-1| <= 0.01 for normalized spaces.
			if n := Norm(v); math.Abs(n-1) > 1e-9 {
				t.Fatalf("dims %d, %q: norm %v", dims, text, n)
			}
		}
	}
}

func TestSimilarityRanksSharedVocabulary(t *testing.T) {
	e := mustNew(t, Config{})
	for _, tc := range []struct{ query, near, far string }{
		{"How does Harness route Knowledge?", "Harness routes Knowledge through KnowledgeRuntime.", "Bake the bread for forty minutes."},
		{"deployment readiness", "launch readiness note", "ops handoff note"},
		{"KnowledgeRuntime", "the knowledge runtime", "the memory store"},
		{"routing", "routes", "bananas"},
	} {
		near, far := e.Similarity(tc.query, tc.near), e.Similarity(tc.query, tc.far)
		if !(near > far+0.05) {
			t.Errorf("%q: near %q %.3f, far %q %.3f", tc.query, tc.near, near, tc.far, far)
		}
	}
	if s := e.Similarity("same text", "same text"); math.Abs(s-1) > 1e-12 {
		t.Errorf("self similarity %v", s)
	}
	if s := e.Similarity("Same TEXT", "same text"); math.Abs(s-1) > 1e-12 {
		t.Errorf("case-insensitive similarity %v", s)
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Dimensions: 1}, true},
		{Config{Dimensions: MaxDimensions}, true},
		{Config{Dimensions: MaxDimensions + 1}, false},
		{Config{Dimensions: -1}, false},
		{Config{CharNGramMin: 4, CharNGramMax: 2}, false},
		{Config{CharNGramMin: 2, CharNGramMax: 17}, false},
		{Config{CharNGramMin: -1}, false},
		{Config{CharNGramMin: 6}, true}, // max follows min
		{Config{NoCharNGrams: true, NoBigrams: true}, true},
	} {
		_, err := New(tc.cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("New(%+v): %v", tc.cfg, err)
		}
	}
	s := mustNew(t, Config{}).Space()
	want := Space{ID: "default", Provider: DefaultProvider, Model: DefaultModel, Dimensions: DefaultDimensions, Normalized: true, Metric: "cosine"}
	if s != want {
		t.Fatalf("Space() = %+v", s)
	}
}

func TestCheck(t *testing.T) {
	e := mustNew(t, Config{Dimensions: 3, Provider: "bring-your-own", Model: "docs-embedding-v1"})
	for _, tc := range []struct {
		provider, model string
		dims            int
		normalized      bool
		ok              bool
	}{
		{"bring-your-own", "docs-embedding-v1", 3, true, true},
		{"", "", 3, true, true},
		{"other", "docs-embedding-v1", 3, true, false},
		{"bring-your-own", "other", 3, true, false},
		{"bring-your-own", "docs-embedding-v1", 4, true, false},
		{"bring-your-own", "docs-embedding-v1", 3, false, false},
	} {
		err := e.Check(tc.provider, tc.model, tc.dims, tc.normalized)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrSpaceMismatch)) {
			t.Errorf("Check(%+v): %v", tc, err)
		}
	}
}

// The upstream fixture's embed payload, answered by an encoder configured
// for its space: the vector satisfies every check Harness applies.
func TestFixturePayload(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "shared", "fixtures", "agentpm", "harness", "knowledge", "embedding_provider_request.json"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("reference material missing in CI: %v", err)
		}
		t.Skipf("shared fixtures not available: %v", err)
	}
	var p struct {
		Provider, Model string
		Dimensions      int
		Normalized      bool
		Text            string
	}
	if err := json.Unmarshal(data, &p, json.MatchCaseInsensitiveNames(true)); err != nil {
		t.Fatal(err)
	}
	e := mustNew(t, Config{Dimensions: p.Dimensions, Provider: p.Provider, Model: p.Model})
	if err := e.Check(p.Provider, p.Model, p.Dimensions, p.Normalized); err != nil {
		t.Fatal(err)
	}
	v := e.Embed(p.Text)
	if len(v) != p.Dimensions || math.Abs(Norm(v)-1) > 0.01 {
		t.Fatalf("vector %v", v)
	}
}

func TestCosine(t *testing.T) {
	if _, err := Cosine([]float64{1}, []float64{1, 0}); !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("got %v", err)
	}
	for _, tc := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 0}, []float64{0, 1}, 0},
		{[]float64{1, 0}, []float64{-2, 0}, -1},
		{[]float64{3, 4}, []float64{6, 8}, 1},
		{[]float64{0, 0}, []float64{1, 0}, 0},
		{nil, nil, 0},
	} {
		got, err := Cosine(tc.a, tc.b)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Cosine(%v, %v) = %v, %v", tc.a, tc.b, got, err)
		}
	}
}

func TestBatch(t *testing.T) {
	e := mustNew(t, Config{Dimensions: 64})
	texts := []string{"alpha", "", "beta gamma", "alpha"}
	got, err := e.EmbedBatch(context.Background(), texts)
	if err != nil || len(got) != len(texts) {
		t.Fatal(got, err)
	}
	for i, text := range texts {
		if !slices.Equal(got[i], e.Embed(text)) {
			t.Fatalf("batch[%d] differs from Embed(%q)", i, text)
		}
	}
	// Appending to one result must not clobber the next.
	_ = append(got[0], 42)
	if !slices.Equal(got[1], e.Embed(texts[1])) {
		t.Fatal("batch vectors share capacity")
	}
	if got, err := e.EmbedBatch(context.Background(), nil); err != nil || len(got) != 0 {
		t.Fatal(got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.EmbedBatch(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled batch: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := mustNew(t, Config{})
	want := e.Embed("concurrent embedding of the same text")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := e.Embed("concurrent embedding of the same text"); !slices.Equal(got, want) {
					t.Error("vector differs between goroutines")
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzEmbed(f *testing.F) {
	f.Add("How does Harness route Knowledge?", 3)
	f.Add("", 1)
	f.Add("\xff🙂 ?!", 7)
	f.Fuzz(func(t *testing.T, text string, dims int) {
		if dims < 1 || dims > 4096 {
			return
		}
		e := mustNew(t, Config{Dimensions: dims})
		v := e.Embed(text)
		if n := Norm(v); len(v) != dims || math.Abs(n-1) > 1e-9 {
			t.Fatalf("len %d norm %v", len(v), n)
		}
	})
}

var sink []float64

func BenchmarkEmbedSentence(b *testing.B) {
	e := mustNew(b, Config{})
	text := "Harness routes Knowledge requests through the KnowledgeRuntime of the configured provider."
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		sink = e.Embed(text)
	}
}

func BenchmarkEmbedParagraph(b *testing.B) {
	e := mustNew(b, Config{})
	text := strings.Repeat("Process providers speak newline-delimited JSON over stdin and stdout; diagnostics go to stderr. ", 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		sink = e.Embed(text)
	}
}

func BenchmarkEmbedBatch100(b *testing.B) {
	e := mustNew(b, Config{})
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = strings.Repeat("memory record number ", 1+i%5) + string(rune('a'+i%26))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.EmbedBatch(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}
