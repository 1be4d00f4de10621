package knowledge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeTree creates files (path -> content) under a new temporary folder,
// with modification times well in the past so their stat is trusted.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		writeFile(t, dir, p, content)
	}
	return dir
}

var past = time.Now().Add(-time.Hour)

func writeFile(t testing.TB, dir, p, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(full, past, past); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, dir string, opt Options) *Index {
	t.Helper()
	ix, err := Open(context.Background(), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func search(t testing.TB, ix *Index, q Query) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func paths(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s:%d", h.Chunk.Path, h.Chunk.StartLine))
	}
	return out
}

// BM25 on a corpus small enough to compute by hand: a.md "apple banana"
// (|D| 2), b.md "apple apple cherry" (|D| 3), avgdl 2.5, N 2.
func TestBM25HandComputed(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.md": "apple banana\n", "b.md": "apple apple cherry\n"})
	ix := open(t, dir, Options{})
	const eps = 1e-9
	// cherry: df 1, IDF ln 2; b.md: tf 1, norm 1.2(0.25+0.75·3/2.5) = 1.38.
	hits := search(t, ix, Query{Text: "cherry"})
	if len(hits) != 1 || hits[0].Chunk.Path != "b.md" ||
		math.Abs(hits[0].BM25-0.64072428455121) > eps || math.Abs(hits[0].Score-0.4201680672268908) > eps {
		t.Fatalf("cherry: %+v", hits)
	}
	// apple: df 2, IDF ln 1.2; b.md (tf 2) outranks a.md (tf 1) despite
	// being longer.
	hits = search(t, ix, Query{Text: "apples"}) // the plural is folded
	if len(hits) != 2 || hits[0].Chunk.Path != "b.md" || hits[1].Chunk.Path != "a.md" ||
		math.Abs(hits[0].BM25-0.2373416715660948) > eps || math.Abs(hits[1].BM25-0.19856803215183175) > eps ||
		hits[0].Rank != 1 || hits[1].Rank != 2 {
		t.Fatalf("apple: %+v", hits)
	}
	// A repeated query term counts twice.
	twice := search(t, ix, Query{Text: "cherry cherry"})
	if math.Abs(twice[0].BM25-2*0.64072428455121) > eps || math.Abs(twice[0].Score-0.4201680672268908) > eps {
		t.Fatalf("cherry cherry: %+v", twice)
	}
}

func TestBM25Parameters(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"short.md": "raft consensus\n",
		"long.md":  "raft consensus " + strings.Repeat("filler words appear here ", 20) + "\n",
	})
	// With length normalisation the short chunk wins; without, they tie
	// and the path breaks the tie.
	if got := paths(search(t, open(t, dir, Options{}), Query{Text: "raft"})); !slices.Equal(got, []string{"short.md:1", "long.md:1"}) {
		t.Fatalf("b=0.75: %v", got)
	}
	if got := paths(search(t, open(t, dir, Options{NoLengthNorm: true}), Query{Text: "raft"})); !slices.Equal(got, []string{"long.md:1", "short.md:1"}) {
		t.Fatalf("b=0: %v", got)
	}
	for _, opt := range []Options{{K1: -1}, {B: 1.5}, {K1: math.NaN()}, {MaxChunkBytes: 10}, {MaxFileBytes: -1}} {
		if _, err := Open(context.Background(), dir, opt); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%+v): %v", opt, err)
		}
	}
}

func TestSearchTestdata(t *testing.T) {
	ix := open(t, "testdata/docs", Options{BaseURI: "agentpm://knowledge/@zack/docs/1.2.3/"})
	if got := ix.Documents(); !slices.Equal(got, []string{"guide.md", "hooks.markdown", "runtime/providers.md"}) {
		t.Fatalf("documents %v (hidden folders, other extensions must be skipped)", got)
	}
	hits := search(t, ix, Query{Text: "How does Harness route Knowledge?", TopK: 3})
	if len(hits) == 0 {
		t.Fatal("no hits")
	}
	top := hits[0]
	if top.Chunk.Path != "guide.md" || !slices.Equal(top.Chunk.Headings, []string{"Harness", "Knowledge"}) ||
		!strings.HasPrefix(top.Chunk.Text, "Harness routes Knowledge through KnowledgeRuntime.") ||
		top.Chunk.StartLine != 12 || top.Chunk.EndLine != 14 || top.Chunk.Title != "Harness Guide" {
		t.Fatalf("top hit %+v", top)
	}
	c := top.Citation
	if c.ChunkID != top.Chunk.ID || c.SourceID != "guide.md" || c.Title != "Harness Guide" ||
		c.URI != "agentpm://knowledge/@zack/docs/1.2.3/guide.md#L12-L14" {
		t.Fatalf("citation %+v", c)
	}
	for i, h := range hits {
		if h.Rank != i+1 || h.Score <= 0 || h.Score >= 1 || (i > 0 && h.Score > hits[i-1].Score) {
			t.Fatalf("hit %d: %+v", i, h)
		}
	}
	// Identifier parts: "KnowledgeRuntime" is found as "knowledge runtime".
	if got := search(t, ix, Query{Text: "knowledge runtime", TopK: 1}); got[0].Chunk.ID != top.Chunk.ID {
		t.Fatalf("camel case: %+v", got)
	}
	// A setext heading path, and a code comment that is not a heading.
	if got := search(t, ix, Query{Text: "replayed", TopK: 1}); !slices.Equal(got[0].Chunk.Headings, []string{"Process providers", "Restarts"}) {
		t.Fatalf("setext: %+v", got)
	}
	if got := search(t, ix, Query{Text: "comment code block", TopK: 1}); !slices.Equal(got[0].Chunk.Headings, []string{"Harness", "Memory"}) {
		t.Fatalf("fenced code: %+v", got)
	}
}

func TestSearchOptions(t *testing.T) {
	ix := open(t, "testdata/docs", Options{})
	ctx := context.Background()
	all := search(t, ix, Query{Text: "harness provider knowledge memory hook", TopK: 100})
	if len(all) < 5 {
		t.Fatalf("%d hits", len(all))
	}
	if got := search(t, ix, Query{Text: "harness provider knowledge memory hook", TopK: 2}); !slices.EqualFunc(got, all[:2], func(a, b Hit) bool { return a.Chunk.ID == b.Chunk.ID }) {
		t.Fatal("TopK is not a prefix of the full ranking")
	}
	if got := search(t, ix, Query{Text: "harness provider knowledge memory hook"}); len(got) != 5 {
		t.Fatalf("default TopK: %d", len(got))
	}
	min := all[2].Score
	for _, h := range search(t, ix, Query{Text: "harness provider knowledge memory hook", TopK: 100, MinScore: min}) {
		if h.Score < min {
			t.Fatalf("score %v below %v", h.Score, min)
		}
	}
	if got := search(t, ix, Query{Text: "harness provider knowledge memory hook", TopK: 100, MinScore: 1}); len(got) != 0 {
		t.Fatalf("MinScore 1: %v", paths(got))
	}
	for _, h := range search(t, ix, Query{Text: "harness hooks", TopK: 100, Documents: []string{"./hooks.markdown"}}) {
		if h.Chunk.Path != "hooks.markdown" {
			t.Fatalf("Documents filter let %s through", h.Chunk.Path)
		}
	}
	if got := search(t, ix, Query{Text: "zebra"}); len(got) != 0 {
		t.Fatalf("unknown term: %v", paths(got))
	}
	// A query of stop words only still searches them.
	if got := search(t, ix, Query{Text: "the"}); len(got) != 0 {
		t.Fatalf("stop words are not indexed, so nothing matches: %v", paths(got))
	}
	for _, q := range []Query{{Text: ""}, {Text: "  ?! "}} {
		if _, err := ix.Search(ctx, q); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("Search(%q): %v", q.Text, err)
		}
	}
	if _, err := ix.Search(ctx, Query{Text: "x", Documents: []string{"nope.md"}}); !errors.Is(err, ErrUnknownDocument) {
		t.Errorf("unknown document: %v", err)
	}
	if _, err := ix.Search(ctx, Query{Text: "x", TopK: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative TopK: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(cctx, Query{Text: "harness"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Equal scores are ordered by path, then line, then id, however the files
// were created.
func TestTieBreaking(t *testing.T) {
	files := map[string]string{}
	for _, name := range []string{"c.md", "a.md", "b/z.md", "b/a.md"} {
		files[name] = "alpha beta gamma delta epsilon zeta eta\n\nfiller one two three four five six\n\nalpha beta gamma delta epsilon zeta eta\n"
	}
	dir := writeTree(t, files)
	want := []string{"a.md:1", "a.md:5", "b/a.md:1", "b/a.md:5", "b/z.md:1", "b/z.md:5", "c.md:1", "c.md:5"}
	for range 3 {
		ix := open(t, dir, Options{MaxChunkBytes: 64})
		if got := paths(search(t, ix, Query{Text: "alpha", TopK: 10})); !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestDocument(t *testing.T) {
	ix := open(t, "testdata/docs", Options{BaseURI: "kb://"})
	d, err := ix.Document("runtime/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile("testdata/docs/runtime/providers.md")
	if d.Text != string(raw) || d.Title != "Process providers" || d.Size != int64(len(raw)) || len(d.SHA256) != 64 ||
		len(d.Chunks) != 2 || d.URI != "kb://runtime/providers.md" || d.SourceID != d.Path {
		t.Fatalf("document %+v", d)
	}
	for _, p := range []string{"/runtime/providers.md", "./runtime/../runtime/providers.md", `runtime\providers.md`} {
		if _, err := ix.Document(p); err != nil {
			t.Errorf("Document(%q): %v", p, err)
		}
	}
	for _, p := range []string{"nope.md", "../docs/guide.md/..", ".drafts/secret.md", "notes.txt", ""} {
		if _, err := ix.Document(p); !errors.Is(err, ErrUnknownDocument) {
			t.Errorf("Document(%q): %v", p, err)
		}
	}
}

func TestRefresh(t *testing.T) {
	dir := writeTree(t, map[string]string{"keep.md": "# Keep\nstable text\n", "edit.md": "# Edit\nold words\n", "drop.md": "# Drop\ngone soon\n"})
	ix := open(t, dir, Options{})
	keepID := search(t, ix, Query{Text: "stable"})[0].Chunk.ID
	built := ix.Stats().BuiltAt

	ch, err := ix.Refresh(context.Background())
	if err != nil || ch.Any() || ch.Unchanged != 3 || ix.Stats().BuiltAt != built {
		t.Fatalf("no-op refresh: %+v, %v", ch, err)
	}

	writeFile(t, dir, "edit.md", "# Edit\nnew words entirely\n")
	writeFile(t, dir, "sub/add.md", "# Add\nfresh content\n")
	os.Remove(filepath.Join(dir, "drop.md"))
	// Same content, new modification time: read again, found unchanged.
	now := time.Now().Add(-time.Minute)
	os.Chtimes(filepath.Join(dir, "keep.md"), now, now)

	ch, err = ix.Refresh(context.Background())
	want := Changes{Added: []string{"sub/add.md"}, Modified: []string{"edit.md"}, Removed: []string{"drop.md"}, Unchanged: 1}
	if err != nil || !slices.Equal(ch.Added, want.Added) || !slices.Equal(ch.Modified, want.Modified) ||
		!slices.Equal(ch.Removed, want.Removed) || ch.Unchanged != 1 || len(ch.Skipped) != 0 {
		t.Fatalf("refresh: %+v, %v", ch, err)
	}
	if got := search(t, ix, Query{Text: "stable"}); got[0].Chunk.ID != keepID {
		t.Fatal("unchanged chunk changed id")
	}
	if got := search(t, ix, Query{Text: "old"}); len(got) != 0 {
		t.Fatal("old text still indexed")
	}
	if got := search(t, ix, Query{Text: "fresh"}); len(got) != 1 || got[0].Chunk.Path != "sub/add.md" {
		t.Fatalf("new file: %v", paths(got))
	}
	if got := search(t, ix, Query{Text: "gone"}); len(got) != 0 {
		t.Fatal("removed file still indexed")
	}
	if s := ix.Stats(); s.Documents != 3 || s.Chunks != 3 || s.Terms == 0 || s.AvgChunkTerms <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A file modified moments before it was read is read again on the next
// refresh even when its size and time look unchanged.
func TestRacyFilesAreReread(t *testing.T) {
	dir := writeTree(t, nil)
	full := filepath.Join(dir, "r.md")
	os.WriteFile(full, []byte("aaaa\n"), 0o644) // modified "now"
	ix := open(t, dir, Options{})
	info, _ := os.Stat(full)
	os.WriteFile(full, []byte("bbbb\n"), 0o644) // same size
	os.Chtimes(full, info.ModTime(), info.ModTime())
	ch, err := ix.Refresh(context.Background())
	if err != nil || !slices.Equal(ch.Modified, []string{"r.md"}) {
		t.Fatalf("racy file: %+v, %v", ch, err)
	}
}

func TestSkippedFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{"big.md": strings.Repeat("x", 200), "ok.md": "fine\n"})
	outside := writeTree(t, map[string]string{"secret.md": "outside the root\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "escape.md")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := os.Symlink("ok.md", filepath.Join(dir, "inside.md")); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), dir, Options{MaxFileBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := ix.Documents(); !slices.Equal(got, []string{"inside.md", "ok.md"}) {
		t.Fatalf("documents %v", got)
	}
	ch, _ := ix.Refresh(context.Background())
	if !slices.Equal(ch.Skipped, []string{"big.md", "escape.md"}) {
		t.Fatalf("skipped %v", ch.Skipped)
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "missing"), Options{}); !errors.Is(err, ErrRoot) {
		t.Fatalf("missing root: %v", err)
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "ok.md"), Options{}); !errors.Is(err, ErrRoot) {
		t.Fatalf("file as root: %v", err)
	}
}

// The cache lets a restarted provider see what changed while it was down
// and read only that.
func TestCacheAcrossRestarts(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.md": "# A\nalpha text\n", "b.md": "# B\nbeta text\n", "c.md": "# C\ngamma text\n"})
	cache := filepath.Join(t.TempDir(), "index.cache")
	ix := open(t, dir, Options{CachePath: cache})
	aID := search(t, ix, Query{Text: "alpha"})[0].Chunk.ID
	if _, err := os.Stat(cache); err != nil {
		t.Fatal("no cache written:", err)
	}

	// While "down": b.md changes size, c.md is deleted, d.md appears, and
	// a.md is rewritten with same-size different bytes and its old time.
	// The stat of a.md is trusted, which proves it is not read again.
	writeFile(t, dir, "b.md", "# B\nbeta text, longer now\n")
	os.Remove(filepath.Join(dir, "c.md"))
	writeFile(t, dir, "d.md", "# D\ndelta text\n")
	writeFile(t, dir, "a.md", "# A\nomega text\n")

	ix2, err := Open(context.Background(), dir, Options{CachePath: cache})
	if err != nil {
		t.Fatal(err)
	}
	if got := search(t, ix2, Query{Text: "alpha"}); len(got) != 1 || got[0].Chunk.ID != aID {
		t.Fatalf("a.md was re-read instead of taken from the cache: %v", paths(got))
	}
	if got := search(t, ix2, Query{Text: "longer"}); len(got) != 1 {
		t.Fatal("change to b.md not detected on start")
	}
	if got := search(t, ix2, Query{Text: "gamma"}); len(got) != 0 {
		t.Fatal("deletion of c.md not detected on start")
	}
	if got := search(t, ix2, Query{Text: "delta"}); len(got) != 1 {
		t.Fatal("new d.md not detected on start")
	}

	// Another chunk size: the cache does not apply.
	ix3 := open(t, dir, Options{CachePath: cache, MaxChunkBytes: 100})
	if got := search(t, ix3, Query{Text: "omega"}); len(got) != 1 {
		t.Fatal("a cache written with other options was used")
	}
	// A corrupt cache is ignored.
	os.WriteFile(cache, []byte("not gob"), 0o644)
	ix4 := open(t, dir, Options{CachePath: cache})
	if got := search(t, ix4, Query{Text: "omega"}); len(got) != 1 {
		t.Fatal("corrupt cache: index not rebuilt")
	}
}

func TestWatch(t *testing.T) {
	dir := writeTree(t, map[string]string{"w.md": "first version\n"})
	ix := open(t, dir, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan Changes, 10)
	done := make(chan error, 1)
	go func() {
		done <- ix.Watch(ctx, 10*time.Millisecond, func(c Changes, err error) {
			if err == nil {
				changes <- c
			}
		})
	}()
	writeFile(t, dir, "w.md", "second version, longer\n")
	select {
	case c := <-changes:
		if !slices.Equal(c.Modified, []string{"w.md"}) {
			t.Fatalf("changes %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch saw nothing")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch returned %v", err)
	}
	if err := ix.Watch(context.Background(), 0, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("zero interval: %v", err)
	}
}

// Searches run while files change and the index is refreshed; -race
// checks the snapshot handover.
func TestConcurrentSearchAndRefresh(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.md": "shared term alpha\n", "b.md": "shared term beta\n"})
	ix := open(t, dir, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				hits, err := ix.Search(ctx, Query{Text: "shared term", TopK: 10})
				if err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
				for i, h := range hits {
					if h.Rank != i+1 || h.Chunk.Text == "" {
						t.Errorf("bad hit %+v", h)
						return
					}
				}
			}
		})
	}
	for i := range 30 {
		writeFile(t, dir, fmt.Sprintf("f%d.md", i%5), strings.Repeat("shared term filler ", i+1))
		if _, err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if ix.Stats().Documents != 7 {
		t.Fatalf("stats %+v", ix.Stats())
	}
}

func TestRefreshHonoursContext(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.md": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context: %v", err)
	}
}
