package realagent

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// Turn is a whole scripted turn for one agent: the workspace's files, the
// prompt, and what the model answers.
type Turn struct {
	Files  map[string]string
	Prompt string
	// Script returns the model's replies for an agent whose workspace is
	// at workspace (tools take absolute paths).
	Script func(workspace string) scriptedmodel.Script
}

// Notes is what TurnFor's workspace holds in notes.txt, and Summary what
// the turn writes to summary.txt.
const (
	Notes   = "first line\nsecond line\n"
	Summary = "The notes have two lines.\n"
)

// The names of the tools of one meaning across the agents: a call names
// them all, and the first the request offers is called (see
// scriptedmodel.Call.Names).
var (
	readTools  = []string{"mcp__acp__Read", "Read", "read_file", "read"}
	writeTools = []string{"mcp__acp__Write", "Write", "write_file", "write"}
	shellTools = []string{"mcp__acp__Bash", "Bash", "run_shell_command", "bash", "shell"}
)

// Usage is the usage the closing reply of TurnFor reports.
var Usage = scriptedmodel.Usage{Input: 1200, Output: 40, CachedInput: 800, Reasoning: 12}

// TurnFor returns the standard turn for agent name: thinking and text, a
// read of notes.txt, a write of summary.txt (which a host's policy
// allows), a command that marks it checked (allowed too), one that
// removes notes.txt (which it denies), and a closing message with usage. Each call is made with the agent's own tool
// (its name and the arguments its schema asks for): codex reads with a
// command (cat) and writes with apply_patch.
func TurnFor(name string) Turn {
	t := Turn{Files: map[string]string{"notes.txt": Notes},
		Prompt: "Read notes.txt, write a one-line summary to summary.txt, then remove notes.txt."}
	if _, ok := Agents[name]; !ok {
		panic(fmt.Sprintf("realagent: no turn for %q", name))
	}
	if name == "gemini" {
		// gemini 0.61 reads a file through the client before it writes it,
		// and does not recognise a client's "not found" (its ACP
		// connection rejects with a plain object, not an Error): it cannot
		// create a file through fs/*, so the summary is written over an
		// empty one.
		t.Files["summary.txt"] = ""
	}
	t.Script = func(ws string) scriptedmodel.Script {
		read := scriptedmodel.Call{Names: readTools, Args: map[string]any{"path": filepath.Join(ws, "notes.txt")}}
		write := scriptedmodel.Call{Names: writeTools, Args: map[string]any{"path": filepath.Join(ws, "summary.txt"), "content": Summary}}
		if name == "codex-acp" {
			read = shellCall(name, "cat notes.txt", "Read notes.txt")
			write = scriptedmodel.Call{Name: "apply_patch", Input: js(`"*** Begin Patch\n*** Add File: summary.txt\n+The notes have two lines.\n*** End Patch\n"`)}
		}
		return scriptedmodel.Script{
			{Thinking: "I will read the notes, write a summary, then clean up.", Text: "Reading the notes.", Calls: []scriptedmodel.Call{read}},
			{Text: "Writing the summary.", Calls: []scriptedmodel.Call{write}},
			{Text: "Marking the notes checked.", Calls: []scriptedmodel.Call{shellCall(name, Allowed, "Mark the notes checked")}},
			{Text: "Removing the notes.", Calls: []scriptedmodel.Call{shellCall(name, removal(name), "Remove notes.txt")}},
			{Thinking: "The removal was declined.", Text: "Summary written; the notes were kept.", Usage: Usage},
		}
	}
	return t
}

// Allowed is the command of TurnFor that a host's policy allows: one
// that writes (touch), so that every agent asks before it runs it.
const Allowed = "touch checked.txt"

// removal is the command that removes the notes, which a host denies; pi
// asks no permission and would run it, so it only counts their bytes.
func removal(name string) string {
	if !Agents[name].Permissions {
		return "wc -c notes.txt"
	}
	return "rm -f notes.txt"
}

// shellCall is a call of agent name's shell tool running command.
func shellCall(name, command, description string) scriptedmodel.Call {
	if name == "codex-acp" {
		return scriptedmodel.Call{Names: []string{"exec_command", "shell"}, Args: map[string]any{"command": command}}
	}
	return scriptedmodel.Call{Names: shellTools, Args: map[string]any{"command": command},
		Optional: map[string]any{"description": description, "timeout": 60000}}
}

// SlowTurnFor is a turn for Ctrl-C: the model thinks, then answers slowly
// (a minute, or until the agent cancels its request).
func SlowTurnFor(string) Turn {
	return Turn{Files: map[string]string{"notes.txt": Notes}, Prompt: "Take your time.",
		Script: func(string) scriptedmodel.Script {
			return scriptedmodel.Script{{Thinking: "Thinking it over slowly.", Text: "Still thinking.", Delay: time.Minute}}
		}}
}

func js(s string) jsontext.Value { return jsontext.Value(s) }
