// Package policy reads and checks a host's policy file: what a runtime may
// do through the host (the permissions its requests are answered with, the
// workspace files it may read and write, the commands it may run, where,
// and their environment). examples/host loads it (-policy), and
// `bridgekit policy check FILE` prints the same findings. examples/host's
// README.md ("Policy") documents the format.
//
// # Workspace code
//
// A command that runs what the workspace holds runs whatever the runtime
// may write where that command reads: git's hooks, core.* config
// (core.fsmonitor, core.pager, ...) and .gitattributes filters; make's
// Makefile; npm's and npx's package scripts; go test, go run and go
// generate; cargo's build scripts; pytest's conftest.py; tox; env, a shell
// or an interpreter given a workspace file; a program named by a relative
// path ([CodeRunner] lists them, as data). Allowing both is allowing any
// command. So [Policy.Check] finds every allow rule for such a command (a
// terminal.allow entry, or a permission rule for execute calls) whose
// working directory can reach a path that another rule lets the runtime
// write, naming both rules, and [Load] refuses such a policy. An explicit
// "trust_workspace_code": true on the command's rule says the risk is
// meant, and silences the finding.
//
// Where a command reads what it runs: git, go and cargo find their
// repository, module or workspace above the directory they start in and
// act on all of it, so they reach the whole workspace; the others reach
// everything below their directory and, in each directory above it, the
// files there (a Makefile, package.json, conftest.py, tox.ini) and the
// hidden directories and node_modules there. A terminal.allow entry
// without "cwd" may run in any directory of the workspace, and so may a
// permission rule (the agent runs the command, wherever it likes); an
// argument that names a path or holds a wildcard may point the command
// anywhere, which reaches the whole workspace too.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/servers/host/permission"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// Policy is a policy file. Its zero value denies everything.
type Policy struct {
	// Permissions answer session/request_permission: the first rule that
	// matches the tool call decides.
	Permissions []permission.Rule `json:"permissions"`
	// FS lists the workspace paths fs/read_text_file and
	// fs/write_text_file (and the file builtins) may touch.
	FS FS `json:"fs"`
	// Terminal lists the commands terminal/create may run, where, and the
	// environment they get.
	Terminal Terminal `json:"terminal"`
	// Agent decides what the runtime a host starts gets of the host's
	// environment, beside the baseline.
	Agent Agent `json:"agent"`

	commands *terminal.Commands
}

// Agent is the policy's "agent".
type Agent struct {
	Env AgentEnv `json:"env"`
}

// AgentEnv is the policy's "agent.env": Inherit names the host's
// variables the runtime gets, each a name or a PREFIX* pattern
// (CheckEnvEntry); names compare case-insensitively, and a pattern never
// passes a variable that changes what a program runs or loads
// (terminal.Steering), which only its exact name passes.
type AgentEnv struct {
	Inherit []string `json:"inherit"`
}

// CheckEnvEntry checks an entry of agent.env.inherit: a variable name, or
// a prefix followed by "*" ("OPENAI_*"). A bare "*", which would pass
// every secret of the host's, is refused.
func CheckEnvEntry(e string) error {
	name, _ := strings.CutSuffix(e, "*")
	switch {
	case e == "*":
		return errors.New(`"*" would pass the agent every variable of the host's: name them, or give a prefix ("OPENAI_*")`)
	case name == "" || strings.ContainsAny(name, "=*\x00"):
		return fmt.Errorf("%q is not a variable name or a PREFIX* pattern", e)
	}
	return nil
}

// FS is the policy's "fs": workspace path patterns.
type FS struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// Terminal is the policy's "terminal".
type Terminal struct {
	Allow []Command          `json:"allow"`
	Env   terminal.EnvPolicy `json:"env"`
}

// Command is an entry of terminal.allow: a command pattern (a JSON
// string), or an object {"command", "cwd", "trust_workspace_code"}.
type Command struct {
	// Pattern is the command pattern (terminal.Commands).
	Pattern string `json:"command"`
	// Cwd are patterns of the workspace directories the command may run
	// in, as the kernel reaches them (links followed): "." is the
	// workspace's root, "src/**" src and every directory below it. None:
	// any directory of the workspace.
	Cwd []string `json:"cwd,omitempty"`
	// TrustWorkspaceCode says that the command may run code the runtime
	// can write (see the package's doc): Check does not report it.
	TrustWorkspaceCode bool `json:"trust_workspace_code,omitempty"`
}

// UnmarshalJSON reads a pattern or an object, strictly.
func (c *Command) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*c = Command{}
		return json.Unmarshal(b, &c.Pattern)
	}
	type plain Command
	var p plain
	if err := json.Unmarshal(b, &p, json.RejectUnknownMembers(true)); err != nil {
		return err
	}
	*c = Command(p)
	return nil
}

// MarshalJSON writes a pattern alone as a string.
func (c Command) MarshalJSON() ([]byte, error) {
	if len(c.Cwd) == 0 && !c.TrustWorkspaceCode {
		return json.Marshal(c.Pattern)
	}
	type plain Command
	return json.Marshal(plain(c))
}

// Load reads the policy file at path and fails on anything it cannot use
// (Parse) and on every finding of Check (errors.Join of them, each a
// *Finding).
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	if fs := p.Check(); len(fs) > 0 {
		errs := make([]error, len(fs))
		for i := range fs {
			errs[i] = &fs[i]
		}
		return nil, fmt.Errorf("policy %s: %w", path, errors.Join(errs...))
	}
	return p, nil
}

// Parse reads a policy file's content strictly (an unknown member is an
// error) and validates it (Validate). It does not apply Check.
func Parse(data []byte) (*Policy, error) {
	p := &Policy{}
	if err := json.Unmarshal(data, p, json.RejectUnknownMembers(true)); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate fails on what cannot be used (a malformed pattern, an unknown
// kind, an empty command) and readies terminal.allow for Commands: a
// Policy built in code rather than by Parse calls it once it is complete.
// It does not apply Check.
func (p *Policy) Validate() error {
	if err := (&permission.Policy{Rules: p.Permissions}).Validate(); err != nil {
		return err
	}
	for _, g := range slices.Concat(p.FS.Read, p.FS.Write) {
		if err := permission.CheckPathGlob(g); err != nil {
			return fmt.Errorf("fs: %w", err)
		}
	}
	rules := make([]terminal.CommandRule, len(p.Terminal.Allow))
	for i, c := range p.Terminal.Allow {
		for _, d := range c.Cwd {
			if d == "." {
				continue
			}
			if err := permission.CheckPathGlob(d); err != nil {
				return fmt.Errorf("terminal.allow[%d] cwd: %w", i, err)
			}
		}
		rules[i] = terminal.CommandRule{Pattern: c.Pattern, Cwd: c.Cwd}
	}
	commands, err := terminal.NewCommandRules(rules)
	if err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	for _, e := range p.Agent.Env.Inherit {
		if err := CheckEnvEntry(e); err != nil {
			return fmt.Errorf("agent.env.inherit: %w", err)
		}
	}
	p.commands = commands
	return nil
}

// Commands is terminal.allow, as Parse or Validate read it (nil allows
// nothing).
func (p *Policy) Commands() *terminal.Commands {
	if p == nil {
		return nil
	}
	return p.commands
}

// Patterns are terminal.allow's command patterns.
func (t Terminal) Patterns() []string {
	out := make([]string, len(t.Allow))
	for i, c := range t.Allow {
		out[i] = c.Pattern
	}
	return out
}

// PermissionPolicy is the permission.Policy of p's rules, paths resolved
// by resolve (a workspace's Resolve: links included).
func (p *Policy) PermissionPolicy(resolve func(string) (string, error)) *permission.Policy {
	return &permission.Policy{Rules: p.Permissions, Resolve: resolve}
}

// FSAccess decides an fs/* access to the workspace path rel (reading, or
// writing with write), and says which list decided.
func (p *Policy) FSAccess(rel string, write bool) (ok bool, reason string) {
	patterns, what := p.FS.Read, "read"
	if write {
		patterns, what = p.FS.Write, "write"
	}
	if slices.ContainsFunc(patterns, func(g string) bool { return permission.Glob(g, rel) }) {
		return true, "fs." + what
	}
	return false, "fs." + what + " does not list it"
}

// Finding is an allow rule for a command that runs workspace code whose
// working directory can reach a path another rule lets the runtime write.
type Finding struct {
	// Command names the rule that allows the command
	// (`terminal.allow[1] "git status"`, `permissions[run-tests] command
	// "go test **"`), Write the rule that lets the runtime write
	// (`fs.write "src/**"`, `permissions[edit-src] "src/**"`,
	// `terminal.allow[2] "cp **"`).
	Command, Write string
	// Why is what the command runs from the workspace.
	Why string
}

func (f *Finding) Error() string {
	return f.Command + " runs code from the workspace (" + f.Why + ") where " + f.Write +
		" lets the runtime write: the runtime could write code there and have it run. " +
		"Narrow the command's \"cwd\" or the writes, or set \"trust_workspace_code\": true on " + f.Command + " if that is meant"
}

// writable is a rule that lets the runtime write: its name, and the
// workspace path patterns it allows.
type writable struct {
	name     string
	patterns []string
}

// runner is a rule that allows a command that runs workspace code.
type runner struct {
	name  string
	why   string
	reach []string // path patterns of what the command may run
}

// Check returns every finding of the policy (see the package's doc), in
// the order of the command rules, then of the write rules.
func (p *Policy) Check() []Finding {
	var writes []writable
	for _, g := range p.FS.Write {
		writes = append(writes, writable{"fs.write " + strconv.Quote(g), []string{g}})
	}
	for i, r := range p.Permissions {
		if r.Decision != permission.DecisionAllow || !writesFiles(r) {
			continue
		}
		pats := r.Paths
		if len(pats) == 0 {
			pats = []string{"**"}
		}
		writes = append(writes, writable{ruleName(i, r) + " " + strconv.Quote(strings.Join(pats, ", ")), pats})
	}
	for i, c := range p.Terminal.Allow {
		if Writer(strings.Fields(c.Pattern)) {
			writes = append(writes, writable{fmt.Sprintf("terminal.allow[%d] %q", i, c.Pattern), []string{"**"}})
		}
	}
	var runners []runner
	for i, c := range p.Terminal.Allow {
		if c.TrustWorkspaceCode {
			continue
		}
		words := strings.Fields(c.Pattern)
		if why, whole := CodeRunner(words); why != "" {
			runners = append(runners, runner{fmt.Sprintf("terminal.allow[%d] %q", i, c.Pattern), why, reach(c.Cwd, whole || pointsAnywhere(words))})
		}
	}
	for i, r := range p.Permissions {
		if r.Decision != permission.DecisionAllow || r.TrustWorkspaceCode || !runsCommands(r) {
			continue
		}
		if len(r.Commands) == 0 {
			why := "it allows an execute call of any command"
			if len(r.Kinds) == 0 {
				why = "it names no kind: it allows an execute call of any command"
			}
			runners = append(runners, runner{ruleName(i, r), why, []string{"**"}})
			continue
		}
		for _, c := range r.Commands {
			if why, _ := CodeRunner(strings.Fields(c)); why != "" {
				// The agent runs the command, in whatever directory.
				runners = append(runners, runner{fmt.Sprintf("%s command %q", ruleName(i, r), c), why, []string{"**"}})
			}
		}
	}
	var out []Finding
	for _, c := range runners {
		for _, w := range writes {
			if reaches(c.reach, w.patterns) {
				out = append(out, Finding{Command: c.name, Write: w.name, Why: c.why})
			}
		}
	}
	return out
}

func ruleName(i int, r permission.Rule) string {
	if r.ID != "" {
		return "permissions[" + r.ID + "]"
	}
	return "permissions[" + strconv.Itoa(i) + "]"
}

// writesFiles reports whether an allow rule can let the runtime write a
// file: it names a kind that writes (edit, delete, move, other), or no
// kind and no command (a rule of commands alone is runsCommands').
func writesFiles(r permission.Rule) bool {
	if len(r.Kinds) == 0 {
		return len(r.Commands) == 0
	}
	return slices.ContainsFunc(r.Kinds, func(k acp.ToolKind) bool {
		return k == acp.ToolKindEdit || k == acp.ToolKindDelete || k == acp.ToolKindMove || k == acp.ToolKindOther
	})
}

// runsCommands reports whether an allow rule can let the runtime run a
// command: it names execute, or no kind (tool names and paths are the
// agent's to choose, and do not keep an execute call out).
func runsCommands(r permission.Rule) bool {
	return len(r.Kinds) == 0 || slices.Contains(r.Kinds, acp.ToolKindExecute)
}

// reaches reports whether a command that runs what the patterns reach
// match can run a path that one of writes allows. A write pattern "D/**"
// is taken as the paths below D, not as a file named D: permission.Glob
// lets it match D itself, which, written as a file, would meet the "*" of
// the directory above and make every cwd reach every such write.
func reaches(reach, writes []string) bool {
	for _, r := range reach {
		for _, w := range writes {
			if d, ok := strings.CutSuffix(w, "/**"); ok && d != "**" {
				w = d + "/*/**"
			}
			if Overlap(r, w) {
				return true
			}
		}
	}
	return false
}

// reach is where a command run in one of the directories cwd (patterns;
// none: anywhere in the workspace) reads what it runs: with whole, the
// whole workspace; else everything below its directory and, in each
// directory above it, the files there and the hidden directories and
// node_modules there, with everything below them.
func reach(cwd []string, whole bool) []string {
	if whole || len(cwd) == 0 {
		return []string{"**"}
	}
	var out []string
	for _, d := range cwd {
		if d == "." {
			return []string{"**"}
		}
		out = append(out, d, d+"/**")
		segs := strings.Split(d, "/")
		for k := range segs {
			above := path.Join(segs[:k]...)
			for _, g := range []string{"*", ".*/**", "node_modules/**"} {
				out = append(out, path.Join(above, g))
			}
		}
	}
	return out
}

// pointsAnywhere reports whether a command pattern's arguments may name a
// path elsewhere than the command's directory: one holds a wildcard, a
// separator, or starts with "." or "~" (make -C DIR, pytest ../x, ...).
func pointsAnywhere(words []string) bool {
	for _, w := range words[min(1, len(words)):] {
		if strings.ContainsAny(w, "*?/\\~") || strings.HasPrefix(w, ".") || strings.Contains(w, "=.") {
			return true
		}
	}
	return false
}

// codeRunner is what CodeRunner knows of a program that runs code from
// the workspace.
type codeRunner struct {
	why   string
	whole bool     // it acts on the whole workspace wherever it starts
	subs  []string // when set, only these subcommands (its second word) do
}

// codeRunners are the programs that run what the workspace holds, by base
// name (a name starting with "python" is python's). The list is data: add
// to it.
var codeRunners = func() map[string]codeRunner {
	m := map[string]codeRunner{
		"git":    {why: "git runs hooks, core.* config commands (core.fsmonitor, core.pager, ...) and .gitattributes filters from the repository", whole: true},
		"go":     {why: "go test, go run, go generate, go build, go install, go vet and go tool run or build the module's code", whole: true, subs: []string{"build", "generate", "install", "run", "test", "tool", "vet"}},
		"cargo":  {why: "cargo runs the packages' build scripts and procedural macros", whole: true},
		"python": {why: "python runs the scripts and modules it is given (pytest's conftest.py, setup.py, ...)"},
	}
	for why, names := range map[string][]string{
		"it runs the recipes of the build files it reads (a Makefile, ...)":                    {"make", "gmake", "bmake", "cmake", "ninja", "meson", "just", "rake", "scons", "bazel", "bazelisk", "gradle", "gradlew", "mvn", "mvnw", "ant", "sbt"},
		"it runs the package's scripts and the code they name":                                 {"npm", "npx", "pnpm", "pnpx", "yarn", "bun", "bunx", "deno", "node", "tsx", "ts-node", "jest", "vitest", "mocha"},
		"it runs the project's tests, hooks and plugins (conftest.py, tox.ini, setup.py, ...)": {"pytest", "py.test", "tox", "nox", "pip", "pip3", "poetry", "pdm", "uv", "uvx", "hatch", "pre-commit"},
		"it runs the scripts it is given":                                                      {"ruby", "bundle", "rspec", "perl", "php", "composer", "phpunit", "java", "dotnet", "swift", "lua", "Rscript", "julia", "elixir", "mix"},
		"it runs the program its arguments name, a workspace file too":                         {"env", "xargs", "nohup", "nice", "timeout", "time", "watch", "strace", "ltrace", "sudo", "doas", "su", "busybox", "exec", "eval", "command", "builtin", "flock", "setsid", "stdbuf", "chroot", "find"},
		"it runs the script or command line its arguments give, a workspace file too":          {"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "pwsh", "powershell", "cmd", "source", "."},
	} {
		for _, n := range names {
			m[n] = codeRunner{why: n + ": " + why}
		}
	}
	return m
}()

// CodeRunner reports whether a command pattern (its words, the program
// first) runs code from the workspace, and why; whole says it acts on the
// whole workspace (its repository, module or workspace, found above where
// it starts) wherever it starts. A program named by a relative path (./x,
// bin/x) is a workspace file itself. A
// pattern without wildcards but with shell syntax (a line a shell runs
// only when equal to it: terminal.Commands.MatchShellLine) may start
// several programs: each of its words counts as one.
func CodeRunner(words []string) (why string, whole bool) {
	if len(words) == 0 {
		return "", false
	}
	if line := strings.Join(words, " "); !strings.ContainsAny(line, "*?") && !terminal.PlainShellLine(line) {
		for i, w := range words {
			w = strings.TrimLeft(w, "({`$;&|!")
			if why, whole := runnerOf(w, words[i+1:]); why != "" {
				return "a command line with shell syntax that runs " + w + ": " + why, whole
			}
		}
		return "", false
	}
	return runnerOf(words[0], words[1:])
}

func runnerOf(prog string, args []string) (why string, whole bool) {
	switch {
	case prog == "":
		return "", false
	case strings.Contains(prog, "/") && !strings.HasPrefix(prog, "/"):
		return prog + " is a program of the workspace", false
	}
	name := path.Base(prog)
	r, ok := codeRunners[name]
	if !ok && strings.HasPrefix(name, "python") {
		r, ok = codeRunners["python"]
	}
	if !ok {
		return "", false
	}
	if len(r.subs) > 0 {
		if len(args) == 0 {
			return "", false
		}
		sub := args[0]
		if !slices.ContainsFunc(r.subs, func(s string) bool { return sub == "**" || terminal.Wildcard(sub, s) }) {
			return "", false
		}
	}
	return r.why, r.whole
}

// writers are programs that write the files their arguments name: an
// allow rule for one with an argument that can be any path (a wildcard)
// lets the runtime write anywhere in the workspace. The list is data.
var writers = []string{
	"cp", "mv", "ln", "rm", "tee", "touch", "mkdir", "dd", "install", "rsync", "tar", "unzip", "gunzip", "patch",
	"sed", "perl", "truncate", "curl", "wget", "chmod", "split", "csplit", "sort", "shred",
}

// Writer reports whether a command pattern (its words, the program first)
// may write a file anywhere in the workspace: a program of writers with a
// wildcard among its arguments.
func Writer(words []string) bool {
	if len(words) < 2 || !slices.Contains(writers, path.Base(words[0])) {
		return false
	}
	return slices.ContainsFunc(words[1:], func(w string) bool { return strings.ContainsAny(w, "*?") })
}
