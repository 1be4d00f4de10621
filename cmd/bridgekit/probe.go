package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bridgekit/bridgekit/clients/acpcmd"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/redact"
	"github.com/bridgekit/bridgekit/runtime/rpc"
)

func init() {
	register(command{name: "probe", summary: "what an ACP agent or Harn runtime offers", run: runProbe})
}

const probeSynopsis = `[--json | --json-out FILE] [flags] -- COMMAND ARGS... [';' COMMAND ARGS...]
       bridgekit probe [--json | --json-out FILE] [flags] --cmd 'COMMAND ARGS' --cmd 'COMMAND ARGS' ...

Starts COMMAND, an ACP agent or a Harn runtime, in a process group of its
own, initializes it and prints what it offers: its protocol version, agent
info and capabilities; its auth methods and the environment variables each
needs; the modes, models and config options of a session it opens in an
empty temporary directory; Harn's extension contract (agentCapabilities
._meta.harn); and the methods it called back while being probed. Nothing is
prompted. The child's input is closed when the probe is done, and its whole
process group stopped.

Several commands, separated by a ';' argument (quote it for the shell) or
given as repeated --cmd (split into words as a shell would, without
expansions), are probed one after the other and shown as a comparison
matrix.

Exit status: 0 when every command was initialized, 1 when one could not be
started, failed or timed out (with --strict also when session/new failed or
an answer did not fit its schema), 2 for a usage error.

Flags:`

type probeOptions struct {
	timeout      time.Duration
	version      int
	capabilities json.RawMessage
	authenticate string
	noSession    bool
	strict       bool
	passStderr   bool
	stderr       io.Writer
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// probeClientCapabilities are what probe says it can do by default: ACP's
// file system and terminal methods and terminal authentication, so that an
// agent shows what it would offer a capable client (terminal auth methods
// are offered only to a client that says it runs them). Nothing is
// prompted, so none of them is called.
const probeClientCapabilities = `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":true}}`

func runProbe(ctx context.Context, env *Env, args []string) int {
	fs := newFlags(env, "probe", probeSynopsis)
	jsonOut := addJSON(fs, "what each command offers, and the comparison matrix")
	var cmds stringList
	fs.Var(&cmds, "cmd", "a `COMMAND` line to probe (repeatable; split into words with shell quoting)")
	var o probeOptions
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, usageOf("timeout", "a scenario is one command probed: starting, initialize, authenticate and session/new together"))
	deadline := addDeadline(fs, 0, "the commands not probed by then are reported as not run")
	fs.IntVar(&o.version, "protocol-version", int(acp.CurrentProtocolVersion), "the protocolVersion to send in initialize")
	caps := fs.String("client-capabilities", probeClientCapabilities, "the clientCapabilities to send in initialize, as a JSON `OBJECT`")
	fs.StringVar(&o.authenticate, "authenticate", "", usageOf("authenticate", "call authenticate with it before session/new"))
	fs.BoolVar(&o.noSession, "no-session", false, "do not open a session (no modes, models or config options)")
	fs.BoolVar(&o.strict, "strict", false, usageOf("strict", "exit 1 also when session/new fails or an answer does not fit its schema"))
	fs.BoolVar(&o.passStderr, "stderr", false, usageOf("stderr", "each command's (default: keep only its end for errors)"))
	if status, stop := parseFlags(fs, args); stop {
		return status
	}
	if !json.Valid([]byte(*caps)) || !bytes.HasPrefix(bytes.TrimSpace([]byte(*caps)), []byte("{")) {
		fmt.Fprintln(env.Stderr, "bridgekit probe: --client-capabilities must be a JSON object")
		return 2
	}
	o.capabilities = json.RawMessage(*caps)
	if o.timeout <= 0 || *deadline < 0 {
		fmt.Fprintln(env.Stderr, "bridgekit probe: --timeout must be positive, --deadline not negative")
		return 2
	}
	if *deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *deadline)
		defer cancel()
	}
	argvs, err := probeCommands(cmds, fs.Args())
	if err != nil {
		fmt.Fprintf(env.Stderr, "bridgekit probe: %v\n", err)
		fs.Usage()
		return 2
	}
	o.stderr = env.Stderr
	results := make([]*probeResult, 0, len(argvs))
	for i, argv := range argvs {
		if ctx.Err() != nil {
			why := "not run: interrupted"
			if *deadline > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = fmt.Sprintf("not run: the run's --deadline (%v) passed", *deadline)
			}
			results = append(results, &probeResult{Command: argv, Error: why, AuthMethods: []authMethod{}})
			continue
		}
		if env.Terminal {
			fmt.Fprintf(env.Stderr, "bridgekit probe: [%d/%d] %s\n", i+1, len(argvs), strings.Join(argv, " "))
		}
		results = append(results, probe(ctx, argv, &o))
	}
	labelProbes(results)
	if jsonOut.wanted() {
		out := struct {
			Probes []*probeResult `json:"probes"`
			Matrix []matrixRow    `json:"matrix,omitempty"`
		}{Probes: results}
		if len(results) > 1 {
			out.Matrix = probeMatrix(results)
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit probe: %v\n", err)
			return 1
		}
		w, closeFile, err := jsonOut.open(env.Stdout)
		if err != nil {
			fmt.Fprintf(env.Stderr, "bridgekit probe: %v\n", err)
			return 1
		}
		_, werr := w.Write(append(b, '\n'))
		if err := closeFile(); werr == nil {
			werr = err
		}
		if werr != nil {
			fmt.Fprintf(env.Stderr, "bridgekit probe: --json-out: %v\n", werr)
			return 1
		}
	}
	if !jsonOut.stdout {
		if len(results) == 1 {
			printProbe(env.Stdout, results[0])
		} else {
			printMatrix(env.Stdout, results)
		}
	}
	status := 0
	for _, r := range results {
		if !r.OK || o.strict && (len(r.Problems) > 0 || r.Session != nil && r.Session.Error != "") {
			status = 1
		}
	}
	if ctx.Err() != nil {
		status = 1
	}
	return status
}

// probeCommands returns the commands to probe: those of --cmd, then those
// after -- separated by ';' arguments.
func probeCommands(cmds []string, rest []string) ([][]string, error) {
	var out [][]string
	for _, c := range cmds {
		argv, err := splitWords(c)
		if err != nil {
			return nil, fmt.Errorf("--cmd %q: %v", c, err)
		}
		if len(argv) == 0 {
			return nil, errors.New("--cmd with no command")
		}
		out = append(out, argv)
	}
	if len(rest) > 0 {
		var cur []string
		for _, a := range append(slices.Clone(rest), ";") {
			if a != ";" {
				cur = append(cur, a)
				continue
			}
			if len(cur) == 0 {
				return nil, errors.New("an empty command (two ';' in a row, or one at an end)")
			}
			out = append(out, cur)
			cur = nil
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no COMMAND to probe (put it after --, or use --cmd)")
	}
	return out, nil
}

// splitWords splits s into words as a POSIX shell does, with '...', "..."
// and backslash quoting but no expansions.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated '")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`unterminated "`)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("a \\ at the end")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// probeResult is what probe found out about one command. Raw members are
// the agent's own JSON, as it sent it.
type probeResult struct {
	Command []string `json:"command"`
	Label   string   `json:"label"`
	// OK says the command was started and answered initialize.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Kind is "acp-agent", or "harn-runtime" when it advertises Harn's
	// extension contract.
	Kind            string          `json:"kind,omitempty"`
	ProtocolVersion json.RawMessage `json:"protocolVersion,omitempty"`
	AgentInfo       json.RawMessage `json:"agentInfo,omitempty"`
	// Capabilities is agentCapabilities as sent; Flat the same, one
	// entry per leaf (see flattenCapabilities), _meta left out.
	Capabilities json.RawMessage `json:"agentCapabilities,omitempty"`
	Flat         []capEntry      `json:"capabilities,omitempty"`
	AuthMethods  []authMethod    `json:"authMethods"`
	Session      *probeSession   `json:"session,omitempty"`
	// Harn is agentCapabilities._meta.harn; HarnResult the _meta.harn of
	// initialize's result, when an agent puts it there.
	Harn       json.RawMessage `json:"harn,omitempty"`
	HarnResult json.RawMessage `json:"harnResult,omitempty"`
	// Called lists the methods of the requests the command sent probe
	// (answered "method not found"), Notified those of its notifications
	// other than session/update (_auth/status_update), which need no
	// answer.
	Called   []string                   `json:"called,omitempty"`
	Notified []string                   `json:"notified,omitempty"`
	Problems []probeProblem             `json:"problems,omitempty"`
	Stderr   string                     `json:"stderr,omitempty"`
	Raw      map[string]json.RawMessage `json:"raw,omitempty"`
	Elapsed  float64                    `json:"elapsedMs"`
	// Before lists label and text lines printProbe prints first (the
	// inspector's: what the client asked).
	Before [][2]string `json:"-"`
}

type capEntry struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

type authMethod struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description,omitempty"`
	Vars        []authVar       `json:"vars,omitempty"`
	Args        []string        `json:"args,omitempty"`
	Env         []string        `json:"env,omitempty"` // names only
	Link        string          `json:"link,omitempty"`
	Typed       bool            `json:"typed"` // gen/acp has a type for it
	Raw         json.RawMessage `json:"raw"`
}

type authVar struct {
	Name     string `json:"name"`
	Label    string `json:"label,omitempty"`
	Optional bool   `json:"optional"`
	Secret   bool   `json:"secret"`
}

type probeSession struct {
	// Where says where the session was opened (printProbe: probe's own
	// empty temporary directory when "").
	Where         string          `json:"-"`
	Error         string          `json:"error,omitempty"`
	CurrentMode   string          `json:"currentModeId,omitempty"`
	Modes         []choice        `json:"modes,omitempty"`
	CurrentModel  string          `json:"currentModelId,omitempty"`
	Models        []choice        `json:"models,omitempty"`
	ConfigOptions []configOption  `json:"configOptions,omitempty"`
	Commands      []string        `json:"commands,omitempty"`
	Meta          json.RawMessage `json:"meta,omitempty"`
}

type choice struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

type configOption struct {
	ID       string   `json:"id"`
	Name     string   `json:"name,omitempty"`
	Category string   `json:"category,omitempty"`
	Type     string   `json:"type,omitempty"`
	Current  string   `json:"currentValue,omitempty"`
	Values   []string `json:"values,omitempty"`
}

type probeProblem struct {
	Method  string `json:"method"`
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// probeGrace is how long a probed command has to exit after its input
// ends (and again after SIGTERM) before it is killed.
const probeGrace = 3 * time.Second

func probe(ctx context.Context, argv []string, o *probeOptions) *probeResult {
	start := time.Now()
	r := &probeResult{Command: argv, AuthMethods: []authMethod{}, Raw: map[string]json.RawMessage{}}
	defer func() { r.Elapsed = float64(time.Since(start).Microseconds()) / 1000 }()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	var mu sync.Mutex
	called, notified := map[string]bool{}, map[string]bool{}
	var commands []string
	note := func(req *rpc.Request) {
		mu.Lock()
		if req.Kind == rpc.KindNotification {
			notified[req.Method] = true
		} else {
			called[req.Method] = true
		}
		mu.Unlock()
	}
	handlers := &acp.ClientHandlers{
		SessionUpdate: func(_ context.Context, n *acp.SessionNotification) error {
			if u := n.Update.AvailableCommandsUpdate; u != nil {
				mu.Lock()
				commands = commands[:0]
				for _, c := range u.AvailableCommands {
					commands = append(commands, c.Name)
				}
				mu.Unlock()
			}
			return nil
		},
		Fallback: rpc.HandlerFunc(func(_ context.Context, req *rpc.Request) (any, error) {
			note(req)
			if req.Kind == rpc.KindNotification {
				return nil, nil // nothing to answer, and nothing to do
			}
			return nil, rpc.MethodNotFound(req.Method)
		}),
	}
	red := redact.FromEnv(os.Environ())
	opts := &acpcmd.Options{StopGrace: probeGrace, Redactor: red, StderrTail: 4 << 10}
	if o.passStderr {
		opts.Stderr = o.stderr
	}
	agent, err := acpcmd.StartAgent(ctx, exec.Command(argv[0], argv[1:]...), handlers, opts)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer func() {
		agent.Close()
		mu.Lock()
		r.Called = slices.Sorted(maps.Keys(called))
		r.Notified = slices.Sorted(maps.Keys(notified))
		mu.Unlock()
	}()
	failed := func(step string, err error) {
		// When ctx ends, the call may fail first with the connection that
		// ending closes: ctx says which it was.
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
			r.Error = fmt.Sprintf("%s: no answer within %s", step, o.timeout)
		case ctx.Err() != nil || errors.Is(err, context.Canceled):
			r.Error = step + ": interrupted"
		default:
			r.Error = fmt.Sprintf("%s: %v", step, red.String(err.Error()))
		}
		if errors.Is(err, rpc.ErrClosed) && ctx.Err() == nil {
			// Its output ended: it is exiting, or has.
			select {
			case <-agent.Exited():
				if werr := agent.Wait(context.Background()); werr != nil {
					r.Error += " (" + werr.Error() + ")"
				} else {
					r.Error += " (it exited)"
				}
			case <-time.After(time.Second):
			}
		}
		r.Stderr = agent.Stderr()
	}

	params := fmt.Sprintf(`{"protocolVersion":%d,"clientCapabilities":%s,"clientInfo":{"name":"bridgekit-probe","version":"1"}}`, o.version, o.capabilities)
	var init json.RawMessage
	if err := agent.Conn().Call(ctx, acp.MethodInitialize, json.RawMessage(params), &init); err != nil {
		failed("initialize", err)
		return r
	}
	r.OK = true
	r.Raw["initialize"] = init
	r.readInitialize(init)

	if o.authenticate != "" {
		var res json.RawMessage
		p, _ := json.Marshal(map[string]string{"methodId": o.authenticate})
		if err := agent.Conn().Call(ctx, acp.MethodAuthenticate, json.RawMessage(p), &res); err != nil {
			failed("authenticate", err)
			r.OK = false
			return r
		}
		r.Raw["authenticate"] = res
		r.check("authenticate", res)
	}
	if o.noSession {
		return r
	}
	r.Session = &probeSession{}
	dir, err := os.MkdirTemp("", "bridgekit-probe-")
	if err != nil {
		r.Session.Error = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	p, _ := json.Marshal(map[string]any{"cwd": dir, "mcpServers": []any{}})
	var sess json.RawMessage
	if err := agent.Conn().Call(ctx, acp.MethodSessionNew, json.RawMessage(p), &sess); err != nil {
		var re *rpc.Error
		switch {
		case errors.As(err, &re):
			r.Session.Error = red.String(fmt.Sprintf("%d %s", re.Code, re.Message))
			if re.Code == -32000 && o.authenticate == "" {
				r.Session.Error += " (try --authenticate with one of its auth methods)"
			}
		default:
			failed("session/new", err)
			r.Session.Error = strings.TrimPrefix(r.Error, "session/new: ")
			r.Error = ""
		}
		return r
	}
	r.Raw["session/new"] = sess
	r.check("session/new", sess)
	r.Session.read(sess)
	// An agent may announce its commands right after session/new: give
	// the notification a moment (it is read before the reply otherwise).
	select {
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
	}
	mu.Lock()
	r.Session.Commands = slices.Clone(commands)
	mu.Unlock()
	return r
}

func (r *probeResult) check(method string, result json.RawMessage) {
	if p, bad := frames.CheckBody(frames.ACP, method, "", true, result); bad {
		r.Problems = append(r.Problems, probeProblem{Method: method, Pointer: "/result" + p.Pointer, Message: p.Message})
	}
}

// readInitialize reads initialize's result: generically, so that an answer
// that does not fit gen/acp's types is still shown (and its problem
// reported), and typed where gen/acp says more (which auth methods it
// knows).
func (r *probeResult) readInitialize(res json.RawMessage) {
	r.check("initialize", res)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil {
		r.Problems = append(r.Problems, probeProblem{Method: "initialize", Pointer: "/result", Message: "not a JSON object"})
		return
	}
	r.ProtocolVersion = m["protocolVersion"]
	r.AgentInfo = nonNull(m["agentInfo"])
	r.Capabilities = nonNull(m["agentCapabilities"])
	r.Kind = "acp-agent"
	if r.Capabilities != nil {
		var caps map[string]json.RawMessage
		if json.Unmarshal(r.Capabilities, &caps) == nil {
			r.Harn = harnMeta(caps["_meta"])
			delete(caps, "_meta")
			r.Flat = flattenCapabilities(caps)
		}
	}
	r.HarnResult = harnMeta(m["_meta"])
	if r.Harn != nil || r.HarnResult != nil {
		r.Kind = "harn-runtime"
	}
	var methods []json.RawMessage
	_ = json.Unmarshal(m["authMethods"], &methods)
	for _, raw := range methods {
		r.AuthMethods = append(r.AuthMethods, readAuthMethod(raw))
	}
}

func nonNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

func harnMeta(meta json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	return nonNull(m["harn"])
}

// flattenCapabilities lists the leaves of a capabilities object by their
// dotted path, sorted: true and false are "yes" and "no", an empty object
// (ACP's way of saying a capability is supported) is "yes", null is "no",
// arrays are their items joined, other values their JSON.
func flattenCapabilities(caps map[string]json.RawMessage) []capEntry {
	var out []capEntry
	var walk func(prefix string, v json.RawMessage)
	walk = func(prefix string, v json.RawMessage) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) == nil && obj != nil {
			if len(obj) == 0 {
				out = append(out, capEntry{prefix, "yes"})
				return
			}
			for k, sub := range obj {
				if k == "_meta" {
					continue
				}
				walk(prefix+"."+k, sub)
			}
			return
		}
		out = append(out, capEntry{prefix, scalarText(v)})
	}
	for k, v := range caps {
		walk(k, v)
	}
	slices.SortFunc(out, func(a, b capEntry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func scalarText(v json.RawMessage) string {
	switch s := strings.TrimSpace(string(v)); s {
	case "true":
		return "yes"
	case "false", "null":
		return "no"
	}
	var arr []json.RawMessage
	if json.Unmarshal(v, &arr) == nil {
		items := make([]string, len(arr))
		for i, a := range arr {
			var str string
			if json.Unmarshal(a, &str) == nil {
				items[i] = str
			} else {
				items[i] = string(a)
			}
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	var str string
	if json.Unmarshal(v, &str) == nil {
		return str
	}
	return string(v)
}

// readAuthMethod reads one auth method: its type with gen/acp where it
// knows it, its members (vars of env_var methods, args and env names of
// terminal ones) from the JSON, which is also kept raw.
func readAuthMethod(raw json.RawMessage) authMethod {
	am := authMethod{Raw: raw}
	var typed acp.AuthMethod
	if err := typed.UnmarshalJSON(raw); err == nil && typed.Unknown == nil {
		am.Typed = true
	}
	var m struct {
		ID          string          `json:"id"`
		Name        string          `json:"name"`
		Type        *string         `json:"type"`
		Description *string         `json:"description"`
		Link        *string         `json:"link"`
		Args        []string        `json:"args"`
		Env         json.RawMessage `json:"env"`
		Vars        []struct {
			Name     string  `json:"name"`
			Label    *string `json:"label"`
			Optional *bool   `json:"optional"`
			Secret   *bool   `json:"secret"`
		} `json:"vars"`
	}
	_ = json.Unmarshal(raw, &m)
	am.ID, am.Name, am.Args = m.ID, m.Name, m.Args
	am.Type = "agent" // ACP: no type is the agent method
	if m.Type != nil {
		am.Type = *m.Type
	}
	if m.Description != nil {
		am.Description = *m.Description
	}
	if m.Link != nil {
		am.Link = *m.Link
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(m.Env, &env) == nil {
		for k := range env {
			am.Env = append(am.Env, k)
		}
		slices.Sort(am.Env)
	}
	for _, v := range m.Vars {
		av := authVar{Name: v.Name, Secret: true} // the schema's defaults
		if v.Label != nil {
			av.Label = *v.Label
		}
		if v.Optional != nil {
			av.Optional = *v.Optional
		}
		if v.Secret != nil {
			av.Secret = *v.Secret
		}
		am.Vars = append(am.Vars, av)
	}
	return am
}

// read reads session/new's result: modes, models (unstable ACP's
// models, and v1's config options) generically.
func (s *probeSession) read(res json.RawMessage) {
	var m struct {
		Modes *struct {
			Current   string `json:"currentModeId"`
			Available []struct {
				ID          string  `json:"id"`
				Name        string  `json:"name"`
				Description *string `json:"description"`
			} `json:"availableModes"`
		} `json:"modes"`
		Models *struct {
			Current   string `json:"currentModelId"`
			Available []struct {
				ID          string  `json:"modelId"`
				Name        string  `json:"name"`
				Description *string `json:"description"`
			} `json:"availableModels"`
		} `json:"models"`
		ConfigOptions []struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Category *string         `json:"category"`
			Type     string          `json:"type"`
			Current  json.RawMessage `json:"currentValue"`
			Options  json.RawMessage `json:"options"`
		} `json:"configOptions"`
		Meta json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(res, &m)
	if m.Modes != nil {
		s.CurrentMode = m.Modes.Current
		for _, c := range m.Modes.Available {
			s.Modes = append(s.Modes, choice{ID: c.ID, Name: c.Name, Description: deref(c.Description)})
		}
	}
	if m.Models != nil {
		s.CurrentModel = m.Models.Current
		for _, c := range m.Models.Available {
			s.Models = append(s.Models, choice{ID: c.ID, Name: c.Name, Description: deref(c.Description)})
		}
	}
	for _, c := range m.ConfigOptions {
		co := configOption{ID: c.ID, Name: c.Name, Category: deref(c.Category), Type: c.Type, Current: scalarText(c.Current)}
		co.Values = optionValues(c.Options)
		s.ConfigOptions = append(s.ConfigOptions, co)
	}
	s.Meta = nonNull(m.Meta)
}

// optionValues lists a select option's values: a flat list of options, or
// groups of them.
func optionValues(raw json.RawMessage) []string {
	var items []struct {
		Value   json.RawMessage `json:"value"`
		Options json.RawMessage `json:"options"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if it.Value != nil {
			out = append(out, scalarText(it.Value))
		} else if it.Options != nil {
			out = append(out, optionValues(it.Options)...)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// labelProbes names each probe by its command's base name, numbered when
// two would have the same.
func labelProbes(rs []*probeResult) {
	count := map[string]int{}
	for _, r := range rs {
		count[filepath.Base(r.Command[0])]++
	}
	seen := map[string]int{}
	for _, r := range rs {
		base := filepath.Base(r.Command[0])
		r.Label = base
		if count[base] > 1 {
			seen[base]++
			r.Label = base + "#" + strconv.Itoa(seen[base])
		}
	}
}
