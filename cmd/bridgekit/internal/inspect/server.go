package inspect

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/bindrules"
	"github.com/bridgekit/bridgekit/runtime/redact"
)

//go:embed static
var static embed.FS

// MaxPage bounds the records one request returns.
const MaxPage = 2000

// ErrNotLoopback is returned by CheckAddr for an address that is not a
// loopback one.
var ErrNotLoopback = errors.New("not a loopback address")

// CheckAddr checks that addr (host:port) names a loopback interface, unless
// remote is set: the inspector shows the traffic to whoever connects.
func CheckAddr(addr string, remote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if remote || host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: %w (use 127.0.0.1:PORT, or allow remote access explicitly)", addr, ErrNotLoopback)
	}
	return nil
}

// Handler returns the inspector's HTTP handler over src. When loopbackOnly
// is set, requests whose Host is not a loopback name are refused (DNS
// rebinding).
func Handler(src Source, loopbackOnly bool) http.Handler {
	return NewHandler(src, Options{LoopbackOnly: loopbackOnly})
}

// Options configure NewHandler.
type Options struct {
	// LoopbackOnly refuses requests whose Host is not a loopback name
	// (DNS rebinding).
	LoopbackOnly bool
	// Summarize describes initialize in the Context view (nil: no
	// summary).
	Summarize Summarizer
	// Redactor masks what is exported and imported, as trace masks what
	// it records (nil: redact.New(), token shapes and secret members).
	Redactor *redact.Redactor
}

// NewHandler returns the inspector's HTTP handler over src.
func NewHandler(src Source, o Options) http.Handler {
	loopbackOnly := o.LoopbackOnly
	red := o.Redactor
	if red == nil {
		red = redact.New()
	}
	// Sessions imported into the page are shown beside src's.
	ov := &overlay{src: src, mem: NewMemory(MaxImported)}
	src = ov
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/export", func(w http.ResponseWriter, r *http.Request) { ov.handleExport(w, r, red) })
	mux.HandleFunc("POST /api/import", func(w http.ResponseWriter, r *http.Request) { ov.handleImport(w, r, red) })
	files, _ := fs.Sub(static, "static")
	fileServer := http.FileServerFS(files)
	mux.Handle("GET /", fileServer)
	mux.HandleFunc("GET /api/sessions", func(w http.ResponseWriter, r *http.Request) {
		ss, err := src.Sessions(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if ss == nil {
			// A store without sessions yet: the page reads an array.
			writeJSON(w, []any{})
			return
		}
		writeJSON(w, ss)
	})
	mux.HandleFunc("GET /api/records", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
		limit, _ := strconv.Atoi(q.Get("limit"))
		if limit <= 0 || limit > MaxPage {
			limit = MaxPage
		}
		recs, err := src.Records(r.Context(), q.Get("session"), after, limit)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if recs == nil {
			writeJSON(w, []any{})
			return
		}
		writeJSON(w, recs)
	})
	// A session's context: initialize summarized as probe prints it, the
	// latency of each method.
	mux.HandleFunc("GET /api/context", func(w http.ResponseWriter, r *http.Request) {
		recs, err := LoadSession(r.Context(), src, r.URL.Query().Get("session"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, SessionContext(recs, o.Summarize))
	})
	// The diff of two sessions under replay's rules: the default ones
	// (unless defaults=0), and any rule=KIND [METHOD] POINTER given.
	mux.HandleFunc("GET /api/diff", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a, b := q.Get("a"), q.Get("b")
		if a == "" || b == "" {
			http.Error(w, "name two sessions: ?a=ID&b=ID", http.StatusBadRequest)
			return
		}
		var specs []string
		if q.Get("defaults") != "0" {
			specs = append(specs, bindrules.Defaults...)
		}
		specs = append(specs, q["rule"]...)
		rules, err := bindrules.ParseAll(specs)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ra, err := LoadSession(r.Context(), src, a)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rb, err := LoadSession(r.Context(), src, b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		res, err := Diff(a, ra, b, rb, rules)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		writeJSON(w, res)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopbackOnly && !loopbackHost(r.Host) {
			http.Error(w, "the inspector answers loopback names only", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(b)
}
