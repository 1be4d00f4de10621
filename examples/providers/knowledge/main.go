// Command knowledge is an AgentPM knowledge provider: a configured
// `type: "process"` knowledge implementation that speaks agentpm-service v1
// on stdin and stdout. It indexes folders of Markdown files and answers
// retrieve with ranked chunks and citations, ranked by Okapi BM25 (package
// internal/knowledge).
//
//	knowledge [-root DIR -package NAME -version V] [-cache FILE] [-watch 2s] [-base-uri URI] [-v]
//
// Which folders it serves:
//
//   - -root, when given, is served as the package -package at -version;
//   - every package of the handshake whose snapshot has a root (the
//     absolute path of the installed package, as the Harness sends it) is
//     indexed from that folder, unless -root already serves that package
//     and version.
//
// The handshake attests each package of its payload: ready when its folder
// was indexed, not ready otherwise (the Harness then treats that package as
// unavailable). It advertises the modes vector_query (ranked search) and
// context_document (a whole document).
//
// retrieve in vector_query mode ranks chunks against query (top_k, default
// 5; score_threshold; document restricts the search to one document) and
// returns each with its rank, score, chunk id, source id (the document's
// path), source title and URI, text and metadata (headings and line range),
// plus a citation per chunk unless return_citations is false. Scores are
// BM25 normalised into [0, 1) by the best score the query could reach (see
// internal/knowledge), not cosine similarities: a score_threshold tuned for
// a vector index needs re-tuning here. context_document mode returns a
// document's whole text. Failures are typed ok:false results:
// knowledge_unavailable (a package this provider does not serve),
// missing_query, missing_document, undeclared_document,
// unsupported_capability (another mode). Diagnostics go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/examples/providers/internal/cli"
	"github.com/bridgekit/bridgekit/examples/providers/internal/knowledge"
	"github.com/bridgekit/bridgekit/gen/agentpmservice"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/bridgekit/bridgekit/servers/service"
)

func main() {
	root := flag.String("root", "", "folder of Markdown files to serve as -package at -version")
	pkg := flag.String("package", "", "package name of -root")
	version := flag.String("version", "0.0.0", "package version of -root")
	cache := flag.String("cache", "", "file that keeps the index of -root between runs")
	watch := flag.Duration("watch", 0, "re-index changed files this often (0: never)")
	baseURI := flag.String("base-uri", "", "prefix of source and chunk URIs (default agentpm://knowledge/<package>/<version>/)")
	verbose := flag.Bool("v", false, "log diagnostics to stderr")
	flag.Parse()
	log := cli.Logger(*verbose)
	if (*root == "") != (*pkg == "") {
		os.Exit(cli.Fatal("knowledge", errors.New("-root and -package go together")))
	}
	p := &provider{log: log, watch: *watch, baseURI: *baseURI, indexes: map[key]*knowledge.Index{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.ctx = ctx
	if *root != "" {
		if err := p.add(*pkg, *version, *root, *cache); err != nil {
			os.Exit(cli.Fatal("knowledge", err))
		}
	}
	srv, err := service.New(agentpmservice.ServiceRoleKnowledge, p.handlers(), &service.Options{Conn: rpc.Options{Logger: log}})
	if err != nil {
		os.Exit(cli.Fatal("knowledge", err))
	}
	status := cli.Serve("knowledge", srv, log, 5*time.Second, cancel)
	p.watchers.Wait()
	os.Exit(status)
}

// key names a package version.
type key struct{ name, version string }

// provider holds an index per package version.
type provider struct {
	ctx      context.Context // ends watchers
	log      *slog.Logger
	watch    time.Duration
	baseURI  string
	watchers sync.WaitGroup

	mu      sync.Mutex
	indexes map[key]*knowledge.Index
}

// add indexes root as the package name at version.
func (p *provider) add(name, version, root, cache string) error {
	base := p.baseURI
	if base == "" {
		base = "agentpm://knowledge/" + name + "/" + version + "/"
	}
	ix, err := knowledge.Open(p.ctx, root, knowledge.Options{CachePath: cache, BaseURI: base, Logger: p.log})
	if err != nil {
		return fmt.Errorf("index %s@%s: %w", name, version, err)
	}
	st := ix.Stats()
	p.log.Info("indexed", "package", name, "version", version, "root", root, "documents", st.Documents, "chunks", st.Chunks)
	p.mu.Lock()
	p.indexes[key{name, version}] = ix
	p.mu.Unlock()
	if p.watch > 0 {
		p.watchers.Go(func() {
			_ = ix.Watch(p.ctx, p.watch, func(c knowledge.Changes, err error) {
				if err != nil {
					p.log.Warn("re-index failed", "package", name, "err", err)
					return
				}
				p.log.Info("re-indexed", "package", name, "added", len(c.Added), "modified", len(c.Modified), "removed", len(c.Removed))
			})
		})
	}
	return nil
}

func (p *provider) index(name, version string) *knowledge.Index {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.indexes[key{name, version}]
}

func (p *provider) handlers() *agentpmservice.ServiceHandlers {
	return &agentpmservice.ServiceHandlers{InitializeKnowledge: p.initialize, Retrieve: p.retrieve}
}

// initialize indexes the handshake's packages that have a root and attests
// each package of the payload.
func (p *provider) initialize(ctx context.Context, in *agentpmservice.KnowledgeInitialize) (*agentpmservice.KnowledgeReadiness, error) {
	r := &agentpmservice.KnowledgeReadiness{
		Modes:    []string{"vector_query", "context_document"},
		Features: []string{"citations", "score_threshold", "document_filter"},
		Packages: []agentpmservice.KnowledgePackageAttestation{},
	}
	for _, snap := range in.Packages {
		if p.index(snap.Name, snap.Version) == nil && snap.Root != nil && *snap.Root != "" {
			if err := p.add(snap.Name, snap.Version, *snap.Root, ""); err != nil {
				p.log.Warn("package unavailable", "package", snap.Name, "err", err)
			}
		}
		r.Packages = append(r.Packages, agentpmservice.KnowledgePackageAttestation{
			Package: new(snap.Name), Version: snap.Version, Ready: p.index(snap.Name, snap.Version) != nil})
	}
	return r, ctx.Err()
}

// retrieve answers one retrieval; failures are typed ok:false results.
func (p *provider) retrieve(ctx context.Context, in *agentpmservice.RetrievePayload) (*agentpmservice.KnowledgeRuntimeResult, error) {
	req := &in.Request
	res := &agentpmservice.KnowledgeRuntimeResult{Package: req.Package, Version: req.Version, Mode: req.Mode,
		Document: req.Document, Query: req.Query}
	started := time.Now()
	defer func() {
		ms := time.Since(started).Milliseconds()
		res.DurationMS = &ms
	}()
	fail := func(code *rpc.Error, format string, args ...any) (*agentpmservice.KnowledgeRuntimeResult, error) {
		res.Ok = false
		res.Error = &agentpmservice.KnowledgeRuntimeFailure{Code: code.Name, Message: fmt.Sprintf(format, args...), Retryable: new(false)}
		return res, nil
	}
	ix := p.index(req.Package, req.Version)
	if ix == nil {
		return fail(agentpmservice.ErrKnowledgeUnavailable, "package %s@%s is not served by this provider", req.Package, req.Version)
	}
	switch req.Mode {
	case agentpmservice.KnowledgeRequestModeVectorQuery:
		return p.search(ctx, ix, req, res, fail)
	case agentpmservice.KnowledgeRequestModeContextDocument:
		if req.Document == nil || *req.Document == "" {
			return fail(agentpmservice.ErrMissingDocument, "a context_document request needs a document")
		}
		doc, err := ix.Document(*req.Document)
		if err != nil {
			return fail(agentpmservice.ErrUndeclaredDocument, "%v", err)
		}
		res.Ok, res.Content = true, &doc.Text
		if req.ReturnCitations == nil || *req.ReturnCitations {
			title, uri := doc.Title, doc.URI
			res.Citations = []agentpmservice.KnowledgeCitation{{ChunkID: doc.SourceID, SourceID: doc.SourceID, Title: &title, URI: optional(uri)}}
		}
		return res, nil
	}
	return fail(agentpmservice.ErrUnsupportedCapability, "mode %q is not supported", req.Mode)
}

type failFunc func(code *rpc.Error, format string, args ...any) (*agentpmservice.KnowledgeRuntimeResult, error)

// search answers a vector_query with ranked chunks.
func (p *provider) search(ctx context.Context, ix *knowledge.Index, req *agentpmservice.KnowledgeRuntimeRequest, res *agentpmservice.KnowledgeRuntimeResult, fail failFunc) (*agentpmservice.KnowledgeRuntimeResult, error) {
	if req.Query == nil {
		return fail(agentpmservice.ErrMissingQuery, "a vector_query request needs a query")
	}
	q := knowledge.Query{Text: *req.Query}
	if req.TopK != nil {
		q.TopK = int(min(max(*req.TopK, 1), 1000))
	}
	if req.ScoreThreshold != nil {
		q.MinScore = *req.ScoreThreshold
	}
	if req.Document != nil && *req.Document != "" {
		if _, err := ix.Document(*req.Document); err != nil {
			return fail(agentpmservice.ErrUndeclaredDocument, "%v", err)
		}
		q.Documents = []string{*req.Document}
	}
	hits, err := ix.Search(ctx, q)
	switch {
	case errors.Is(err, knowledge.ErrEmptyQuery):
		return fail(agentpmservice.ErrMissingQuery, "%v", err)
	case err != nil:
		return nil, err // the context ended: an error frame
	}
	res.Ok = true
	res.Results = make([]agentpmservice.KnowledgeRetrievalResult, 0, len(hits))
	cite := req.ReturnCitations == nil || *req.ReturnCitations
	if cite {
		res.Citations = make([]agentpmservice.KnowledgeCitation, 0, len(hits))
	}
	for _, h := range hits {
		text, title := h.Chunk.Text, h.Chunk.Title
		meta, _ := json.Marshal(chunkMeta{Path: h.Chunk.Path, Headings: h.Chunk.Headings, StartLine: h.Chunk.StartLine,
			EndLine: h.Chunk.EndLine, BM25: h.BM25, ScoreKind: "bm25_normalized"})
		res.Results = append(res.Results, agentpmservice.KnowledgeRetrievalResult{
			Rank: int64(h.Rank), Score: h.Score, ChunkID: h.Chunk.ID, SourceID: h.Chunk.SourceID,
			SourceTitle: &title, SourceURI: optional(sourceURI(ix, h.Chunk.Path)), Text: &text, ChunkMetadata: meta,
		})
		if cite {
			ctitle := h.Citation.Title
			res.Citations = append(res.Citations, agentpmservice.KnowledgeCitation{ChunkID: h.Citation.ChunkID,
				SourceID: h.Citation.SourceID, Title: &ctitle, URI: optional(h.Citation.URI)})
		}
	}
	return res, nil
}

// chunkMeta is a result's chunk_metadata: where the chunk is, and its raw
// BM25 score beside the normalised one.
type chunkMeta struct {
	Path      string   `json:"path"`
	Headings  []string `json:"headings"`
	StartLine int      `json:"start_line"`
	EndLine   int      `json:"end_line"`
	BM25      float64  `json:"bm25"`
	ScoreKind string   `json:"score_kind"`
}

// sourceURI is the URI of the document at path, when the index has URIs.
func sourceURI(ix *knowledge.Index, path string) string {
	if doc, err := ix.Document(path); err == nil {
		return doc.URI
	}
	return ""
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
