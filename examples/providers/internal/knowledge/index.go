package knowledge

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridgekit/bridgekit/examples/providers/internal/tokenize"
)

// Errors. Every error this package returns matches one of these, or a
// context error, with errors.Is.
var (
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("knowledge: invalid options")
	// ErrRoot: the folder to index cannot be opened or walked.
	ErrRoot = errors.New("knowledge: cannot read the folder")
	// ErrEmptyQuery: the query has no searchable term (protocol code
	// missing_query).
	ErrEmptyQuery = errors.New("knowledge: query has no searchable terms")
	// ErrUnknownDocument: the path names no indexed document (protocol
	// codes undeclared_document / missing_document).
	ErrUnknownDocument = errors.New("knowledge: no such document")
)

// Options configures an Index. The zero value is usable.
type Options struct {
	// K1 and B are BM25's term-frequency saturation and length
	// normalisation (defaults 1.2 and 0.75). Set NoLengthNorm for B = 0,
	// since a zero B means the default.
	K1, B        float64
	NoLengthNorm bool
	// MaxChunkBytes bounds a chunk's text (default 1500 bytes).
	MaxChunkBytes int
	// MaxFileBytes skips larger files, reported in Changes.Skipped
	// (default 8 MiB).
	MaxFileBytes int64
	// Extensions are the file name extensions indexed, compared without
	// case (default .md and .markdown).
	Extensions []string
	// CachePath, when set, is a file where the index is kept between runs:
	// Open then reads only the files that changed since (see Refresh).
	CachePath string
	// BaseURI, when set, makes each chunk's URI BaseURI + path + "#L<a>-L<b>"
	// and each source's BaseURI + path.
	BaseURI string
	// Logger receives diagnostics (a corrupt cache, unreadable files).
	// Default: discard.
	Logger *slog.Logger
}

// Chunk is a piece of a document: a run of paragraphs under one heading.
type Chunk struct {
	// ID is stable: it depends on the path, heading path and text of the
	// chunk only, so re-indexing unchanged text gives the same id.
	ID string
	// SourceID identifies the document; it is Path.
	SourceID string
	// Path is the document's slash-separated path relative to the root.
	Path string
	// Title is the document's title: its front matter title:, first
	// level-1 heading, first heading, or file name, in that order.
	Title string
	// Headings is the heading path from the outermost heading down to the
	// one the chunk is under; empty before the first heading.
	Headings []string
	// StartLine and EndLine are the 1-based, inclusive line range of the
	// chunk in its file.
	StartLine, EndLine int
	// Text is the chunk's Markdown, without its headings.
	Text string
}

// Citation says where a chunk comes from.
type Citation struct {
	ChunkID, SourceID  string
	Path, Title        string
	Headings           []string
	StartLine, EndLine int
	// URI is set when Options.BaseURI is.
	URI string
}

// Hit is one ranked chunk.
type Hit struct {
	// Rank is 1 for the best hit.
	Rank int
	// Score is BM25 divided by the largest BM25 any chunk could reach for
	// this query (every query term with saturated frequency): in [0, 1),
	// comparable between queries, and the scale of Query.MinScore.
	Score float64
	// BM25 is the raw Okapi BM25 score.
	BM25     float64
	Chunk    Chunk
	Citation Citation
}

// Query is a search.
type Query struct {
	// Text is the query; it must have at least one term.
	Text string
	// TopK is the number of hits wanted (default 5).
	TopK int
	// MinScore drops hits whose Score is below it.
	MinScore float64
	// Documents, when non-empty, restricts the search to these paths.
	Documents []string
}

// Document is an indexed file.
type Document struct {
	Path, SourceID, Title string
	// Text is the whole file.
	Text string
	// SHA256 is the hex digest of the file's bytes; Size their count.
	SHA256 string
	Size   int64
	Chunks []Chunk
	// URI is set when Options.BaseURI is.
	URI string
}

// Changes reports what a Refresh found, each list sorted by path.
type Changes struct {
	Added, Modified, Removed []string
	// Skipped lists files too large or unreadable to index.
	Skipped []string
	// Unchanged counts the files reused as they were.
	Unchanged int
}

// Any reports whether the index changed.
func (c Changes) Any() bool { return len(c.Added)+len(c.Modified)+len(c.Removed) > 0 }

// Stats describes the current index.
type Stats struct {
	Documents, Chunks, Terms int
	// AvgChunkTerms is BM25's average document length.
	AvgChunkTerms float64
	// BuiltAt is when the index last changed.
	BuiltAt time.Time
}

// Index is a BM25 index of the Markdown files under a folder. Search,
// Document and Stats may be called concurrently with each other and with
// Refresh, which replaces the index atomically when it is done.
type Index struct {
	root string
	opt  Options
	exts []string
	log  *slog.Logger

	refresh sync.Mutex // one Refresh at a time
	snap    atomic.Pointer[snapshot]
	scratch sync.Pool // *accumulator
}

// Open indexes the Markdown files under root. With Options.CachePath, it
// starts from the cached index and re-reads only the files that changed.
func Open(ctx context.Context, root string, opt Options) (*Index, error) {
	if opt.K1 == 0 {
		opt.K1 = 1.2
	}
	if opt.B == 0 && !opt.NoLengthNorm {
		opt.B = 0.75
	}
	if opt.NoLengthNorm {
		opt.B = 0
	}
	if opt.MaxChunkBytes == 0 {
		opt.MaxChunkBytes = 1500
	}
	if opt.MaxFileBytes == 0 {
		opt.MaxFileBytes = 8 << 20
	}
	switch {
	case opt.K1 < 0 || math.IsNaN(opt.K1) || math.IsInf(opt.K1, 0):
		return nil, fmt.Errorf("%w: K1 %v", ErrInvalidOptions, opt.K1)
	case opt.B < 0 || opt.B > 1 || math.IsNaN(opt.B):
		return nil, fmt.Errorf("%w: B %v outside [0, 1]", ErrInvalidOptions, opt.B)
	case opt.MaxChunkBytes < 64:
		return nil, fmt.Errorf("%w: MaxChunkBytes %d below 64", ErrInvalidOptions, opt.MaxChunkBytes)
	case opt.MaxFileBytes < 0:
		return nil, fmt.Errorf("%w: MaxFileBytes %d", ErrInvalidOptions, opt.MaxFileBytes)
	}
	ix := &Index{root: root, opt: opt, log: opt.Logger}
	if ix.log == nil {
		ix.log = slog.New(slog.DiscardHandler)
	}
	ix.exts = opt.Extensions
	if len(ix.exts) == 0 {
		ix.exts = []string{".md", ".markdown"}
	}
	for i, e := range ix.exts {
		ix.exts[i] = strings.ToLower(e)
	}
	ix.snap.Store(&snapshot{files: map[string]*fileEntry{}})
	if opt.CachePath != "" {
		if s, err := loadCache(opt.CachePath, ix.signature()); err != nil {
			ix.log.Warn("knowledge: ignoring the index cache", "path", opt.CachePath, "err", err)
		} else if s != nil {
			ix.snap.Store(s)
		}
	}
	if _, err := ix.Refresh(ctx); err != nil {
		return nil, err
	}
	return ix, nil
}

// signature names everything that decides how a file becomes chunks and
// terms; a cache written under another signature is not used.
func (ix *Index) signature() string {
	return fmt.Sprintf("chunks=%d;tokenize=%s", ix.opt.MaxChunkBytes, tokenizeVersion)
}

// tokenizeVersion must change whenever package tokenize cuts text
// differently, so that cached terms are not reused.
const tokenizeVersion = "1"

// Root returns the indexed folder.
func (ix *Index) Root() string { return ix.root }

// Refresh brings the index up to date with the folder: new files are
// indexed, changed ones re-indexed and deleted ones dropped. A file whose
// size and modification time are unchanged, and was not modified close to
// when it was last read, is trusted without reading it (the rule git uses
// for its index); any other file is read, and re-chunked only if its
// SHA-256 differs. The index is replaced atomically at the end: searches
// running meanwhile see the previous one.
func (ix *Index) Refresh(ctx context.Context) (Changes, error) {
	ix.refresh.Lock()
	defer ix.refresh.Unlock()
	old := ix.snap.Load()
	var ch Changes
	root, err := os.OpenRoot(ix.root)
	if err != nil {
		return ch, fmt.Errorf("%w: %w", ErrRoot, err)
	}
	defer root.Close()
	files := make(map[string]*fileEntry, len(old.files))
	walkErr := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			ix.log.Warn("knowledge: skipping", "path", p, "err", err)
			ch.Skipped = append(ch.Skipped, p)
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && strings.HasPrefix(name, ".") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(name, ".") || !slices.Contains(ix.exts, strings.ToLower(path.Ext(name))) {
			return nil
		}
		info, err := root.Stat(p) // follows links that stay inside the root
		if err != nil || !info.Mode().IsRegular() {
			if err != nil {
				ix.log.Warn("knowledge: skipping", "path", p, "err", err)
			}
			ch.Skipped = append(ch.Skipped, p)
			return nil
		}
		prev := old.files[p]
		if prev != nil && prev.Size == info.Size() && prev.ModTime == info.ModTime().UnixNano() &&
			info.ModTime().Add(racyWindow).Before(time.Unix(0, prev.ReadAt)) {
			files[p] = prev
			ch.Unchanged++
			return nil
		}
		if info.Size() > ix.opt.MaxFileBytes {
			ch.Skipped = append(ch.Skipped, p)
			return nil
		}
		e, err := ix.readFile(root, p, info, prev)
		if err != nil {
			ix.log.Warn("knowledge: skipping", "path", p, "err", err)
			ch.Skipped = append(ch.Skipped, p)
			return nil
		}
		files[p] = e
		switch {
		case prev == nil:
			ch.Added = append(ch.Added, p)
		case prev.SHA256 != e.SHA256:
			ch.Modified = append(ch.Modified, p)
		default:
			ch.Unchanged++
		}
		return nil
	})
	if walkErr != nil {
		if ctx.Err() != nil {
			return Changes{}, ctx.Err()
		}
		return Changes{}, fmt.Errorf("%w: %w", ErrRoot, walkErr)
	}
	for p := range old.files {
		if files[p] == nil {
			ch.Removed = append(ch.Removed, p)
		}
	}
	slices.Sort(ch.Removed) // the walk gives the others in lexical order
	if ch.Any() || old.builtAt.IsZero() {
		s := build(files)
		ix.snap.Store(s)
		ix.saveCache(s)
	} else if ix.touched(old, files) {
		// Only stat data moved (a touched file): keep the postings, record
		// the new stat so the next Refresh trusts it.
		s := *old
		s.files = files
		ix.snap.Store(&s)
		ix.saveCache(&s)
	}
	return ch, nil
}

// racyWindow: a file modified within this long before it was read may have
// changed again within its timestamp's granularity, so its stat is not
// trusted.
const racyWindow = 2 * time.Second

func (ix *Index) touched(old *snapshot, files map[string]*fileEntry) bool {
	for p, e := range files {
		if old.files[p] != e {
			return true
		}
	}
	return false
}

func (ix *Index) readFile(root *os.Root, p string, info fs.FileInfo, prev *fileEntry) (*fileEntry, error) {
	readAt := time.Now()
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ix.opt.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > ix.opt.MaxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", ix.opt.MaxFileBytes)
	}
	sum := sha256.Sum256(data)
	e := &fileEntry{Path: p, Size: int64(len(data)), ModTime: info.ModTime().UnixNano(), ReadAt: readAt.UnixNano(),
		SHA256: hex.EncodeToString(sum[:])}
	if prev != nil && prev.SHA256 == e.SHA256 {
		e.Title, e.Text, e.Chunks = prev.Title, prev.Text, prev.Chunks
		return e, nil
	}
	doc := parseMarkdown(p, string(data), ix.opt.MaxChunkBytes)
	e.Title, e.Text = doc.title, strings.ToValidUTF8(string(data), "\uFFFD")
	e.Chunks = make([]chunkEntry, len(doc.chunks))
	for i, c := range doc.chunks {
		e.Chunks[i] = newChunkEntry(c)
	}
	return e, nil
}

// Watch calls Refresh every interval until ctx ends, reporting each
// refresh that changed something, or failed, to onChange (which may be
// nil). It returns ctx's error.
func (ix *Index) Watch(ctx context.Context, interval time.Duration, onChange func(Changes, error)) error {
	if interval <= 0 {
		return fmt.Errorf("%w: watch interval %v", ErrInvalidOptions, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			ch, err := ix.Refresh(ctx)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if onChange != nil && (err != nil || ch.Any()) {
				onChange(ch, err)
			}
		}
	}
}

// Stats describes the current index.
func (ix *Index) Stats() Stats {
	s := ix.snap.Load()
	return Stats{Documents: len(s.files), Chunks: len(s.chunks), Terms: len(s.postings), AvgChunkTerms: s.avgLen, BuiltAt: s.builtAt}
}

// Documents lists the indexed paths in lexical order.
func (ix *Index) Documents() []string {
	s := ix.snap.Load()
	return slices.Sorted(func(yield func(string) bool) {
		for p := range s.files {
			if !yield(p) {
				return
			}
		}
	})
}

// Document returns the indexed document at path (slash-separated,
// relative to the root; a leading "./" or "/" is ignored).
func (ix *Index) Document(p string) (*Document, error) {
	s := ix.snap.Load()
	e := s.files[cleanPath(p)]
	if e == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDocument, p)
	}
	d := &Document{Path: e.Path, SourceID: e.Path, Title: e.Title, Text: e.Text, SHA256: e.SHA256, Size: e.Size,
		Chunks: make([]Chunk, len(e.Chunks)), URI: ix.sourceURI(e.Path)}
	for i := range e.Chunks {
		d.Chunks[i] = e.Chunks[i].Chunk
	}
	return d, nil
}

func cleanPath(p string) string {
	p = path.Clean("/" + strings.ReplaceAll(p, "\\", "/"))
	return strings.TrimPrefix(p, "/")
}

func (ix *Index) sourceURI(p string) string {
	if ix.opt.BaseURI == "" {
		return ""
	}
	return ix.opt.BaseURI + p
}

func (ix *Index) citation(c *Chunk) Citation {
	ct := Citation{ChunkID: c.ID, SourceID: c.SourceID, Path: c.Path, Title: c.Title, Headings: c.Headings,
		StartLine: c.StartLine, EndLine: c.EndLine}
	if u := ix.sourceURI(c.Path); u != "" {
		ct.URI = fmt.Sprintf("%s#L%d-L%d", u, c.StartLine, c.EndLine)
	}
	return ct
}

// Search ranks the chunks by BM25 against q.Text and returns the best
// q.TopK, best first. Ties are broken by path, then line, then chunk id,
// so equal input gives equal output.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.TopK < 0 {
		return nil, fmt.Errorf("%w: TopK %d", ErrInvalidOptions, q.TopK)
	}
	if q.TopK == 0 {
		q.TopK = 5
	}
	terms := queryTerms(q.Text)
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrEmptyQuery, q.Text)
	}
	s := ix.snap.Load()
	var only map[string]bool
	if len(q.Documents) > 0 {
		only = make(map[string]bool, len(q.Documents))
		for _, d := range q.Documents {
			p := cleanPath(d)
			if s.files[p] == nil {
				return nil, fmt.Errorf("%w: %q", ErrUnknownDocument, d)
			}
			only[p] = true
		}
	}
	acc, _ := ix.scratch.Get().(*accumulator)
	if acc == nil {
		acc = &accumulator{}
	}
	defer ix.scratch.Put(acc)
	acc.reset(len(s.chunks))
	k1, b := ix.opt.K1, ix.opt.B
	var bound float64
	n := float64(len(s.chunks))
	for _, t := range terms {
		posts := s.postings[t.term]
		df := float64(len(posts))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		w := idf * float64(t.count)
		bound += w * (k1 + 1)
		for _, p := range posts {
			c := s.chunks[p.chunk]
			if only != nil && !only[c.Path] {
				continue
			}
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*float64(c.Length)/s.avgLen)
			acc.add(p.chunk, w*tf*(k1+1)/(tf+norm))
		}
	}
	h := &hitHeap{snap: s}
	for _, i := range acc.touched {
		raw := acc.scores[i]
		score := 0.0
		if bound > 0 {
			score = raw / bound
		}
		if score < q.MinScore || raw <= 0 {
			continue
		}
		h.offer(scored{i, raw, score}, q.TopK)
	}
	out := make([]Hit, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		sc := heap.Pop(h).(scored)
		c := &s.chunks[sc.chunk].Chunk
		out[i] = Hit{Rank: i + 1, Score: sc.score, BM25: sc.raw, Chunk: *c, Citation: ix.citation(c)}
	}
	return out, nil
}

type queryTerm struct {
	term  string
	count int
}

// queryTerms cuts a query like the indexed text, counting repeats; a query
// of stop words only keeps them.
func queryTerms(text string) []queryTerm {
	toks := tokenize.Tokens(text, tokenize.Search)
	if len(toks) == 0 {
		toks = tokenize.Tokens(text, tokenize.Options{Stem: true})
	}
	slices.Sort(toks)
	var out []queryTerm
	for _, t := range toks {
		if len(out) > 0 && out[len(out)-1].term == t {
			out[len(out)-1].count++
			continue
		}
		out = append(out, queryTerm{t, 1})
	}
	return out
}

// accumulator holds per-chunk scores for one search; pooled.
type accumulator struct {
	scores  []float64
	seen    []bool
	touched []int32
}

func (a *accumulator) reset(n int) {
	for _, i := range a.touched {
		a.scores[i], a.seen[i] = 0, false
	}
	a.touched = a.touched[:0]
	if len(a.scores) < n {
		a.scores, a.seen = make([]float64, n), make([]bool, n)
	}
}

func (a *accumulator) add(i int32, v float64) {
	if !a.seen[i] {
		a.seen[i] = true
		a.touched = append(a.touched, i)
	}
	a.scores[i] += v
}

type scored struct {
	chunk      int32
	raw, score float64
}

// hitHeap keeps the best k hits; its root is the worst of them.
type hitHeap struct {
	snap *snapshot
	h    []scored
}

// better orders hits: higher score, then path, line and id ascending.
func (h *hitHeap) better(a, b scored) bool {
	if a.raw != b.raw {
		return a.raw > b.raw
	}
	ca, cb := &h.snap.chunks[a.chunk].Chunk, &h.snap.chunks[b.chunk].Chunk
	if ca.Path != cb.Path {
		return ca.Path < cb.Path
	}
	if ca.StartLine != cb.StartLine {
		return ca.StartLine < cb.StartLine
	}
	return ca.ID < cb.ID
}

func (h *hitHeap) offer(s scored, k int) {
	if len(h.h) < k {
		heap.Push(h, s)
		return
	}
	if h.better(s, h.h[0]) {
		h.h[0] = s
		heap.Fix(h, 0)
	}
}

func (h *hitHeap) Len() int           { return len(h.h) }
func (h *hitHeap) Less(i, j int) bool { return h.better(h.h[j], h.h[i]) }
func (h *hitHeap) Swap(i, j int)      { h.h[i], h.h[j] = h.h[j], h.h[i] }
func (h *hitHeap) Push(x any)         { h.h = append(h.h, x.(scored)) }
func (h *hitHeap) Pop() any {
	x := h.h[len(h.h)-1]
	h.h = h.h[:len(h.h)-1]
	return x
}

// fileEntry is one indexed file; immutable once in a snapshot.
type fileEntry struct {
	Path    string
	Size    int64
	ModTime int64 // UnixNano
	ReadAt  int64 // UnixNano, when the bytes were read
	SHA256  string
	Title   string
	Text    string
	Chunks  []chunkEntry
}

// chunkEntry is a chunk with its term frequencies.
type chunkEntry struct {
	Chunk
	Terms  []termFreq // sorted by term
	Length int        // number of terms, BM25's |D|
}

type termFreq struct {
	Term string
	N    int32
}

// newChunkEntry counts the terms of a chunk: its heading path and text.
func newChunkEntry(c Chunk) chunkEntry {
	counts := map[string]int32{}
	n := 0
	count := func(t string) { counts[t]++; n++ }
	for _, h := range c.Headings {
		tokenize.Each(h, tokenize.Search, count)
	}
	tokenize.Each(c.Text, tokenize.Search, count)
	e := chunkEntry{Chunk: c, Length: n, Terms: make([]termFreq, 0, len(counts))}
	for t, k := range counts {
		e.Terms = append(e.Terms, termFreq{t, k})
	}
	slices.SortFunc(e.Terms, func(a, b termFreq) int { return strings.Compare(a.Term, b.Term) })
	return e
}

// snapshot is an immutable index.
type snapshot struct {
	files    map[string]*fileEntry
	chunks   []*chunkEntry // all chunks, by path then position
	postings map[string][]posting
	avgLen   float64
	builtAt  time.Time
}

type posting struct {
	chunk int32
	tf    int32
}

func build(files map[string]*fileEntry) *snapshot {
	s := &snapshot{files: files, postings: map[string][]posting{}, builtAt: time.Now()}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	total := 0
	for _, p := range paths {
		e := files[p]
		for i := range e.Chunks {
			c := &e.Chunks[i]
			id := int32(len(s.chunks))
			s.chunks = append(s.chunks, c)
			total += c.Length
			for _, t := range c.Terms {
				s.postings[t.Term] = append(s.postings[t.Term], posting{id, t.N})
			}
		}
	}
	if len(s.chunks) > 0 {
		s.avgLen = float64(total) / float64(len(s.chunks))
	}
	if s.avgLen == 0 {
		s.avgLen = 1
	}
	return s
}
