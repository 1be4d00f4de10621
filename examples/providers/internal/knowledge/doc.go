// Package knowledge is the engine of the example knowledge provider: it
// indexes a folder of Markdown files and answers queries with ranked
// chunks, scores and citations, ranked by Okapi BM25.
//
// # Indexing
//
// Open walks the folder (through os.Root, so links cannot lead outside it;
// folders whose name starts with "." are skipped) and indexes every file
// with one of Options.Extensions (.md and .markdown by default). A file is
// cut into chunks at its headings (ATX "#" headings and setext underlines;
// "#" lines inside fenced code blocks are not headings) and, within a
// section, at blank lines into blocks (paragraphs, lists, fenced code)
// that are packed into chunks of at most Options.MaxChunkBytes. Every
// chunk keeps what a citation needs: the file's path (its source id), the
// document title, the heading path and the 1-based line range. Chunk ids
// hash the path, heading path and text, so they survive edits elsewhere in
// the file.
//
// Refresh brings the index up to date: new, changed and deleted files are
// found by stat and SHA-256 and only changed files are re-read and
// re-chunked. With Options.CachePath the index is saved after each change
// and reused by the next Open, so a restart detects what changed while the
// provider was down and reads only that. Watch polls Refresh. Searches are
// never blocked by a refresh: the index is an immutable snapshot swapped
// atomically.
//
// # Ranking
//
// Text is cut into terms by package tokenize (tokenize.Search: lower case,
// camelCase parts, plurals folded, English stop words dropped); a chunk's
// terms are its heading path's and its text's. The score of chunk D for
// query Q is
//
//	BM25(D, Q) = Σ_{t ∈ Q} qtf(t) · IDF(t) · tf(t, D)·(k1 + 1) / (tf(t, D) + k1·(1 − b + b·|D|/avgdl))
//	IDF(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// with N chunks, df(t) chunks containing t, |D| the chunk's term count and
// avgdl the mean of |D|; k1 = 1.2 and b = 0.75 unless Options say
// otherwise. IDF in this form (Lucene's) is never negative. Hit.Score is
// BM25 divided by Σ qtf(t)·IDF(t)·(k1+1), the score a chunk would reach if
// every query term saturated it: a number in [0, 1) whose scale does not
// depend on the query's length, used by Query.MinScore (a knowledge
// request's score_threshold). Hits with equal scores are ordered by path,
// then line, then chunk id, so results are deterministic.
//
// # Mapping onto the knowledge role
//
// A retrieve request in vector_query mode maps onto Search (query → Text,
// top_k → TopK, score_threshold → MinScore, document → Documents) and its
// hits onto results (rank, score, chunk_id, source_id, source_title,
// text) and citations (Hit.Citation); context_document mode maps onto
// Document. ErrEmptyQuery is the protocol's missing_query and
// ErrUnknownDocument its undeclared_document.
package knowledge
