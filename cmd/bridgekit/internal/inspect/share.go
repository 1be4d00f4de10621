package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

// MaxImport bounds the bytes of one import, and MaxImported those the
// imported sessions hold in all (past it the oldest frames are dropped,
// as Memory does).
const (
	MaxImport   = 64 << 20
	MaxImported = 256 << 20
)

// Export writes the records of a session as a trace (JSONL, one record a
// line, as trace --out writes it): a session record first (made from the
// session's summary when the source kept none), its frames, stderr lines
// and end. Every line is masked again by red, as trace masks what it
// records (secrets in members whose names say so, token shapes, the
// values red was told of), and a frame changed by it is marked redacted.
func Export(w io.Writer, sum store.Session, recs []*tracelog.Record, red *redact.Redactor) error {
	var buf []byte
	write := func(r *tracelog.Record) error {
		var err error
		buf, err = r.Marshal(buf[:0])
		if err != nil {
			return err
		}
		_, err = w.Write(buf)
		return err
	}
	if len(recs) == 0 || recs[0].Type != tracelog.TypeSession {
		if err := write(&tracelog.Record{Type: tracelog.TypeSession, Session: sum.ID, Time: sum.Started.UTC(), Version: tracelog.Version, Command: sum.Command}); err != nil {
			return err
		}
	}
	for _, r := range recs {
		c := *r
		mask(&c, red)
		if len(c.Problems) > 0 {
			c.Problems = slices.Clone(c.Problems)
			for i := range c.Problems {
				c.Problems[i].Message = red.String(c.Problems[i].Message)
			}
		}
		if len(c.Notes) > 0 {
			c.Notes = slices.Clone(c.Notes)
			for i := range c.Notes {
				c.Notes[i].Message = red.String(c.Notes[i].Message)
			}
		}
		if err := write(&c); err != nil {
			return err
		}
	}
	return nil
}

// overlay is src with the sessions imported into the page beside it.
type overlay struct {
	src Source
	mu  sync.Mutex // orders imports
	mem *Memory
}

func (o *overlay) Sessions(ctx context.Context) ([]store.Session, error) {
	ss, err := o.src.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	imp, _ := o.mem.Sessions(ctx)
	if len(imp) == 0 {
		return ss, nil
	}
	out := append(imp, ss...)
	slices.SortStableFunc(out, func(a, b store.Session) int { return b.Started.Compare(a.Started) })
	return out, nil
}

func (o *overlay) Records(ctx context.Context, session string, after int64, limit int) ([]*tracelog.Record, error) {
	if o.mem.Has(session) {
		return o.mem.Records(ctx, session, after, limit)
	}
	return o.src.Records(ctx, session, after, limit)
}

// ErrImport is the error (wrapped) of an import that is no traffic.
var ErrImport = errors.New("cannot import")

// importTraffic reads body, traffic of any form traffic reads but a store
// (a trace as exported, a recording, NDJSON), into o's memory: each frame
// classified and checked afresh, each session named as it was unless the
// inspector already shows one of that name (then "NAME (imported N)").
// name names a recording or an NDJSON stream (the file's base name). It
// returns the sessions made.
func (o *overlay) importTraffic(ctx context.Context, name string, body []byte, red *redact.Redactor) ([]string, error) {
	format, err := traffic.SniffReader(name, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImport, err)
	}
	if format == traffic.Store {
		return nil, fmt.Errorf("%w: %s is a session store: open it with bridgekit inspect", ErrImport, name)
	}
	var recs []*tracelog.Record
	err = traffic.ReadFrom(ctx, name, bytes.NewReader(body), format, "", time.Now(), func(_ int, r *tracelog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImport, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no record", ErrImport, name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	known := map[string]bool{}
	if ss, err := o.Sessions(ctx); err == nil {
		for _, s := range ss {
			known[s.ID] = true
		}
	}
	renamed := map[string]string{}
	var made []string
	for _, r := range recs {
		id, ok := renamed[r.Session]
		if !ok {
			id = r.Session
			for n := 1; known[id]; n++ {
				id = fmt.Sprintf("%s (imported %d)", r.Session, n)
			}
			known[id] = true
			renamed[r.Session] = id
			made = append(made, id)
		}
		r.Session = id
		// What is shown is masked, as trace masks what it records.
		mask(r, red)
		o.mem.Put(r)
	}
	return made, nil
}

func (o *overlay) handleImport(w http.ResponseWriter, r *http.Request, red *redact.Redactor) {
	// A page elsewhere may not post here: a simple cross-origin request
	// cannot carry this content type, and one that comes with an Origin
	// must be this page's.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-ndjson" {
		http.Error(w, "import takes Content-Type: application/x-ndjson", http.StatusUnsupportedMediaType)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
		http.Error(w, "import from another origin", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxImport))
	if err != nil {
		http.Error(w, fmt.Sprintf("import: %v (at most %d MiB)", err, MaxImport>>20), http.StatusRequestEntityTooLarge)
		return
	}
	name := strings.TrimSpace(r.URL.Query().Get("name"))
	name = strings.TrimSuffix(name, ".jsonl")
	if name == "" || len(name) > 200 {
		name = "import"
	}
	made, err := o.importTraffic(r.Context(), name, body, red)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	writeJSON(w, map[string]any{"sessions": made})
}

func (o *overlay) handleExport(w http.ResponseWriter, r *http.Request, red *redact.Redactor) {
	id := r.URL.Query().Get("session")
	ss, err := o.Sessions(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	i := slices.IndexFunc(ss, func(s store.Session) bool { return s.ID == id })
	if i < 0 {
		http.Error(w, "no session "+id, http.StatusNotFound)
		return
	}
	recs, err := LoadSession(r.Context(), o, id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fileName(id) + ".jsonl"}))
	if err := Export(w, ss[i], recs, red); err != nil {
		// The status is sent: net/http's own way to cut the response
		// short, so the browser reports a failed download rather than
		// keep a truncated file.
		panic(http.ErrAbortHandler)
	}
}

// fileName makes a session id a file name.
func fileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "session" + string(b)
	}
	return string(b)
}

// mask masks a frame's or stderr line's text with red, as trace masks what it records (a whole frame as
// JSON, a cut one and stderr as text), and marks the record redacted when that changed it.
func mask(r *tracelog.Record, red *redact.Redactor) {
	if r.Type != tracelog.TypeFrame && r.Type != tracelog.TypeStderr {
		return
	}
	line := r.Line()
	masked := red.Bytes(line)
	if r.Type == tracelog.TypeFrame && !r.Truncated {
		masked = red.JSON(line)
	}
	if !bytes.Equal(masked, line) {
		r.Redacted = true
		r.SetLine(masked)
	}
}
