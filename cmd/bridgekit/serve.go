package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/syncwriter"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/runtime/eventlog"
	"github.com/bridgekit/bridgekit/runtime/eventlog/boltlog"
	"github.com/bridgekit/bridgekit/runtime/frame"
	"github.com/bridgekit/bridgekit/runtime/ndjson"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/remote"
)

func init() {
	register(command{name: "serve", summary: "put a stdio ACP agent or Harn runtime behind WebSocket and HTTP", run: runServe})
}

const serveSynopsis = `[--listen ADDR] [--token-file F] [--store DIR] [--tls-cert F --tls-key F] -- AGENT ARGS...

Serves AGENT, any ACP agent or Harn runtime that speaks on its stdio, on
one endpoint (--path, default /acp) for clients across the network: ACP's
WebSocket transport (ws://ADDR/acp, with Harn's profile: event ids on every
frame, session/list, session/load with lastAckedEventId) and Streamable
HTTP (http://ADDR/acp). Each remote connection gets an AGENT process of its
own, contained as a child of the host is: it ends with the connection (or
once its client has been gone for --retention), and nothing it started
outlives it.

A client whose socket drops reconnects and resumes its session from the
last event id it acknowledged: every frame after it once, in order, a
running prompt going on. With --store the frames are kept on disk, so a
client gets them after a restart too (and then expired_replay_only: the
agent is gone).

Security: the address is loopback unless given; a non-loopback address
needs --token-file (one token per line; clients send "Authorization:
Bearer TOKEN" or "X-API-Key: TOKEN"). Without --tls-cert and --tls-key
traffic is in clear text, which a warning says at every start. Browsers
are refused (403) unless their origin is listed with --allow-origin.
Tokens are compared in constant time and never logged, quoted or passed to
AGENT.

--out, --trace-store and --ui record every connection's traffic as
'bridgekit trace' records a child's: one session per connection.

Flags:`

type serveFlags struct {
	listen, path, tokenFile, store, tlsCert, tlsKey string
	origins                                         multiFlag
	out, traceStore, ui                             string
	maxConns, maxPerToken, maxSessions, maxFrame    int
	maxLog, maxLogTotal                             int64
	retention                                       time.Duration
	logConns, uiRemote, draftCursor                 bool
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runServe(ctx context.Context, env *Env, args []string) int {
	var sf serveFlags
	fs := newFlags(env, "serve", serveSynopsis)
	fs.StringVar(&sf.listen, "listen", "127.0.0.1:8765", "listen on `ADDR` (host:port); a non-loopback host needs --token-file")
	fs.StringVar(&sf.path, "path", "/acp", "the endpoint's `PATH`")
	fs.StringVar(&sf.tokenFile, "token-file", "", "admit only clients presenting a token listed in `FILE` (one a line; # comments)")
	fs.StringVar(&sf.store, "store", "", usageOf("store", "a directory: the frames sent to clients, in PATH/events.db (bbolt), so that clients resume across a restart"))
	fs.StringVar(&sf.tlsCert, "tls-cert", "", "serve TLS with this certificate `FILE` (PEM)")
	fs.StringVar(&sf.tlsKey, "tls-key", "", "and this key `FILE` (PEM)")
	fs.Var(&sf.origins, "allow-origin", "let browsers from `ORIGIN` (https://host[:port]) connect; repeatable; * allows any")
	// --out, --ui and --ui-allow-remote mean what they mean to 'bridgekit trace'; trace's --store (a
	// session store) is --trace-store here, where --store is the event log's directory.
	fs.StringVar(&sf.out, "out", "", usageOf("out", "one trace session per connection"))
	fs.StringVar(&sf.traceStore, "trace-store", "", "keep the sessions in the SQLite session store `DB` (created if missing; 'bridgekit trace --store', one session per connection)")
	fs.StringVar(&sf.ui, "ui", "", usageOf("ui", "host:port, loopback only unless --ui-allow-remote"))
	fs.BoolVar(&sf.uiRemote, "ui-allow-remote", false, usageOf("ui-allow-remote", "the inspector shows the traffic, masked, to whoever connects"))
	fs.IntVar(&sf.maxConns, "max-conns", 256, "at most `N` connections at once (detached ones included)")
	fs.IntVar(&sf.maxPerToken, "max-conns-per-token", 64, "at most `N` connections per token")
	fs.IntVar(&sf.maxSessions, "max-sessions", 64, "at most `N` sessions per connection")
	fs.IntVar(&sf.maxFrame, "max-frame", frame.DefaultMaxFrame, "refuse messages over `BYTES`")
	fs.Int64Var(&sf.maxLog, "max-log-bytes", eventlog.DefaultMaxBytes, "keep at most `BYTES` of the frames sent to clients per session, for resuming")
	fs.Int64Var(&sf.maxLogTotal, "max-log-total", eventlog.DefaultMaxTotalBytes, "and at most `BYTES` in all, every session's (the oldest go first)")
	fs.DurationVar(&sf.retention, "retention", 5*time.Minute, "keep a connection whose client went away this long for it to resume")
	fs.BoolVar(&sf.draftCursor, "draft-cursor", false, "DRAFT: number Streamable HTTP's events (SSE id and _meta[\"acp/cursor\"]) and resume a GET with Last-Event-ID, as the draft durable-transport RFD has it")
	fs.BoolVar(&sf.logConns, "log-connections", false, "log every connection on stderr (when it opens, resumes, ends)")
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(env.Stderr, "bridgekit serve: no AGENT to serve (put it after --)")
		fs.Usage()
		return 2
	}
	if (sf.tlsCert == "") != (sf.tlsKey == "") {
		fmt.Fprintln(env.Stderr, "bridgekit serve: --tls-cert and --tls-key go together")
		return 2
	}
	loopback, err := isLoopbackAddr(sf.listen)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit serve: --listen: %v\n", err)
		return 2
	}
	if !loopback && sf.tokenFile == "" {
		fmt.Fprintf(env.Stderr, "bridgekit serve: --listen %s is not a loopback address: give --token-file, so that only your clients get in\n", sf.listen)
		return 2
	}
	if sf.ui != "" {
		if err := checkListenAddr(sf.ui, sf.uiRemote); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit serve: --ui: %v\n", err)
			return 2
		}
	}
	logLevel := slog.LevelWarn
	if sf.logConns {
		logLevel = slog.LevelInfo
	}
	stderr := syncwriter.New(env.Stderr)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))

	opts := remote.Options{
		AllowedOrigins:       sf.origins,
		MaxConns:             sf.maxConns,
		MaxConnsPerPrincipal: sf.maxPerToken,
		MaxSessions:          sf.maxSessions,
		MaxFrame:             sf.maxFrame,
		Retention:            sf.retention,
		MaxLogBytes:          sf.maxLog,
		MaxLogTotalBytes:     sf.maxLogTotal,
		DraftCursor:          sf.draftCursor,
		Logger:               logger,
	}
	if sf.tokenFile != "" {
		tokens, err := readTokens(sf.tokenFile)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit serve: --token-file: %v\n", err)
			return 2
		}
		opts.Authenticate = remote.Tokens(tokens, nil)
	}
	var log eventlog.Log
	if sf.store != "" {
		if err := os.MkdirAll(sf.store, 0o700); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit serve: --store: %v\n", err)
			return 1
		}
		bl, err := boltlog.Open(filepath.Join(sf.store, "events.db"), &boltlog.Options{MaxBytes: sf.maxLog, MaxTotalBytes: sf.maxLogTotal})
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit serve: --store: %v\n", err)
			return 1
		}
		defer bl.Close()
		log = bl
		opts.Log = log
	}

	rec, err := newServeRecorders(env, sf)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit serve: %v\n", err)
		return 1
	}
	defer rec.close(env)
	if rec.active() {
		opts.Observe = rec.observe
	}

	var children sync.WaitGroup
	backend := func(ctx context.Context, info remote.ConnInfo) (frame.Transport, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		proc, err := child.Spawn(cmd, child.Spec{Group: true, Stderr: stderr})
		if err != nil {
			return nil, err
		}
		logger.Info("serve: connection", "conn", info.ID, "transport", info.Transport, "principal", info.Principal, "pid", cmd.Process.Pid)
		rec.begin(info.ID, argv)
		children.Add(1)
		stop := sync.OnceFunc(func() {
			go func() {
				defer children.Done()
				proc.Stop(child.ExitGrace)
				rec.finish(info.ID, proc)
				logger.Info("serve: agent ended", "conn", info.ID, "err", proc.Err())
			}()
		})
		go func() {
			select {
			case <-proc.Exited():
			case <-ctx.Done():
			}
			stop()
		}()
		return &agentTransport{ndjson.NewTransport(proc.Stdout, proc.Stdin, &ndjson.Options{MaxFrame: sf.maxFrame}), stop}, nil
	}
	srv := remote.NewServer(backend, &opts)
	mux := http.NewServeMux()
	mux.Handle(sf.path, srv)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // no slowloris: headers come in time or the connection goes
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit serve: %v\n", err)
		return 1
	}
	scheme := "ws"
	if sf.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(sf.tlsCert, sf.tlsKey)
		if err != nil {
			ln.Close()
			fmt.Fprintf(env.Stderr, "bridgekit serve: TLS: %v\n", err)
			return 1
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, hs.TLSConfig)
		scheme = "wss"
	} else {
		fmt.Fprintf(stderr, "bridgekit serve: warning: serving without TLS: traffic, tokens included, crosses the network in clear text (give --tls-cert and --tls-key)\n")
	}
	fmt.Fprintf(stderr, "bridgekit serve: %s://%s%s (WebSocket) and %s://%s%s (Streamable HTTP)\n",
		scheme, ln.Addr(), sf.path, strings.Replace(scheme, "ws", "http", 1), ln.Addr(), sf.path)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(env.Stderr, "bridgekit serve: %v\n", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	hs.Shutdown(sctx)
	cancel()
	srv.Close()
	hs.Close()
	children.Wait()
	return 0
}

// isLoopbackAddr reports whether addr's host is a loopback address or localhost.
func isLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// readTokens reads a token file: one token a line, blank lines and # comments skipped.
func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no token in the file")
	}
	return out, nil
}

// serveRecorders record each connection as a trace session.
type serveRecorders struct {
	mu      sync.Mutex
	byConn  map[string]*recorder
	jsonl   *syncwriter.Writer
	file    *os.File
	sinks   []sink
	closers []func() error
	red     *redact.Redactor
}

// lockedSink serializes a sink shared by the connections' recorders.
type lockedSink struct {
	mu sync.Mutex
	s  sink
}

func (l *lockedSink) Put(r *tracelog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Put(r)
}

func newServeRecorders(env *Env, sf serveFlags) (*serveRecorders, error) {
	r := &serveRecorders{byConn: map[string]*recorder{}, red: redact.FromEnv(os.Environ())}
	if sf.out != "" {
		f, err := os.OpenFile(sf.out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
		r.file, r.jsonl = f, syncwriter.New(f)
		r.closers = append(r.closers, f.Close)
	}
	if sf.traceStore != "" {
		st, err := openStoreSink(sf.traceStore)
		if err != nil {
			r.close(env)
			return nil, fmt.Errorf("--trace-store: %w", err)
		}
		r.closers = append(r.closers, st.Close)
		r.sinks = append(r.sinks, &lockedSink{s: st})
	}
	if sf.ui != "" {
		ui, err := startLiveUI(env, sf.ui, false)
		if err != nil {
			r.close(env)
			return nil, fmt.Errorf("--ui: %w", err)
		}
		r.closers = append(r.closers, ui.Close)
		r.sinks = append(r.sinks, &lockedSink{s: ui})
	}
	return r, nil
}

func (r *serveRecorders) active() bool { return r.jsonl != nil || len(r.sinks) > 0 }

func (r *serveRecorders) begin(conn string, argv []string) {
	if !r.active() {
		return
	}
	rec := &recorder{session: conn, cls: frames.New(""), red: r.red, sinks: r.sinks}
	if r.jsonl != nil {
		rec.jsonl = bufio.NewWriterSize(r.jsonl, 1<<20)
	}
	rec.start(time.Now(), argv)
	r.mu.Lock()
	r.byConn[conn] = rec
	r.mu.Unlock()
}

// observe records a frame crossing the server: from the client it goes in to the agent, to the client
// it comes out of the agent.
func (r *serveRecorders) observe(t remote.Traffic) {
	r.mu.Lock()
	rec := r.byConn[t.Conn]
	r.mu.Unlock()
	if rec == nil {
		return
	}
	dir := frames.In
	if t.Dir == remote.ToClient {
		dir = frames.Out
	}
	line := t.Frame
	truncated := false
	if len(line) > 1<<20 {
		line, truncated = line[:1<<20], true
	}
	rec.frame(dir, time.Now(), append([]byte(nil), line...), len(t.Frame), truncated, false)
	rec.flush()
}

func (r *serveRecorders) finish(conn string, proc *child.Process) {
	r.mu.Lock()
	rec := r.byConn[conn]
	delete(r.byConn, conn)
	r.mu.Unlock()
	if rec == nil {
		return
	}
	status, sig := exitStatus(proc.Cmd.ProcessState, proc.Err())
	rec.end(time.Now(), status, sig)
}

func (r *serveRecorders) close(env *Env) {
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i](); err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit serve: %v\n", err)
		}
	}
	r.closers = nil
}

// agentTransport is the NDJSON transport on an agent's stdio; closing it closes the pipes and stops the
// agent.
type agentTransport struct {
	*ndjson.Transport
	stop func()
}

func (t *agentTransport) Close() error {
	err := t.Transport.Close()
	t.stop()
	return err
}
