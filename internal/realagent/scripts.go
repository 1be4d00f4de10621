package realagent

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/internal/scriptedmodel"
)

// Turn is a whole scripted turn for one agent: the workspace's files, the
// prompt, and what the model answers.
type Turn struct {
	Files  map[string]string
	Prompt string
	// Script returns the model's replies for an agent whose workspace is
	// at workspace (Claude Code's tools take absolute paths).
	Script func(workspace string) scriptedmodel.Script
	// StopReason is the turn's expected stop reason, and Asks the number of
	// replies the agent is expected to ask the model for: codex-acp's only
	// reject option aborts the turn ("cancelled"), and claude-code-acp ends
	// it after a denial, so neither asks for the closing reply.
	StopReason string
	Asks       int
	// Denied is a string whose presence in a permission request's title or
	// raw input makes DenyMatching deny it.
	Denied string
}

// Notes is what TurnFor's workspace holds in notes.txt.
const Notes = "first line\nsecond line\n"

// TurnFor returns the standard turn for agent name: thinking, a plan, a
// file read, a file write the client allows, a command the client denies
// (rm -f notes.txt), and a closing message. For claude-code-acp, whose
// tools go through the client, the read and the write are fs/* requests
// and an allowed command (wc -l) runs in a terminal/* terminal.
func TurnFor(name string) Turn {
	t := Turn{Files: map[string]string{"notes.txt": Notes}, Denied: "rm -f",
		Prompt: "Read notes.txt, write a one-line summary to summary.txt, then remove notes.txt."}
	t.StopReason = "end_turn"
	switch name {
	case "codex-acp":
		t.Script = func(string) scriptedmodel.Script {
			return scriptedmodel.Script{
				{Thinking: "I will plan, read the notes, write a summary, then clean up.", Calls: []scriptedmodel.Call{{Name: "update_plan", Input: js(`{"explanation":"Three steps.","plan":[{"step":"Read notes.txt","status":"in_progress"},{"step":"Write summary.txt","status":"pending"},{"step":"Remove notes.txt","status":"pending"}]}`)}}},
				{Text: "Reading the notes.", Calls: []scriptedmodel.Call{{Name: "exec_command", Input: js(`{"cmd":"cat notes.txt"}`)}}},
				{Text: "Writing the summary.", Calls: []scriptedmodel.Call{{Name: "apply_patch", Input: js(`"*** Begin Patch\n*** Add File: summary.txt\n+The notes have two lines.\n*** End Patch\n"`)}}},
				{Text: "Removing the notes.", Calls: []scriptedmodel.Call{{Name: "exec_command", Input: js(`{"cmd":"rm -f notes.txt"}`)}}},
				{Thinking: "The removal was declined.", Text: "Summary written; the notes were kept.", Usage: scriptedmodel.Usage{Input: 1200, Output: 40, CachedInput: 800, Reasoning: 12}},
			}
		}
	case "claude-agent-acp", "claude-code-acp":
		read, write, bash := "Read", "Write", "Bash"
		if name == "claude-code-acp" {
			read, write, bash = "mcp__acp__Read", "mcp__acp__Write", "mcp__acp__Bash"
		}
		t.Script = func(ws string) scriptedmodel.Script {
			notes, summary := filepath.Join(ws, "notes.txt"), filepath.Join(ws, "summary.txt")
			s := scriptedmodel.Script{
				{Thinking: "I will plan, read the notes, write a summary, then clean up.", Text: "Planning.", Calls: []scriptedmodel.Call{{Name: "TodoWrite", Input: obj(map[string]any{"todos": []any{
					map[string]any{"content": "Read notes.txt", "status": "in_progress", "activeForm": "Reading notes.txt"},
					map[string]any{"content": "Write summary.txt", "status": "pending", "activeForm": "Writing summary.txt"},
					map[string]any{"content": "Remove notes.txt", "status": "pending", "activeForm": "Removing notes.txt"},
				}})}}},
				{Text: "Reading the notes.", Calls: []scriptedmodel.Call{{Name: read, Input: obj(map[string]any{"file_path": notes})}}},
				{Text: "Writing the summary.", Calls: []scriptedmodel.Call{{Name: write, Input: obj(map[string]any{"file_path": summary, "content": "The notes have two lines.\n"})}}},
			}
			if name == "claude-code-acp" {
				s = append(s, scriptedmodel.Reply{Text: "Counting lines.", Calls: []scriptedmodel.Call{{Name: bash, Input: obj(map[string]any{"command": "wc -l notes.txt", "description": "Count the lines of notes.txt", "timeout": 10000})}}})
			}
			return append(s,
				scriptedmodel.Reply{Text: "Removing the notes.", Calls: []scriptedmodel.Call{{Name: bash, Input: obj(map[string]any{"command": "rm -f notes.txt", "description": "Remove notes.txt", "timeout": 10000})}}},
				scriptedmodel.Reply{Thinking: "The removal was declined.", Text: "Summary written; the notes were kept.", Usage: scriptedmodel.Usage{Input: 1200, Output: 40, CachedInput: 800}},
			)
		}
	default:
		panic(fmt.Sprintf("realagent: no turn for %q", name))
	}
	t.Asks = len(t.Script("/"))
	if name != "claude-agent-acp" {
		t.Asks--
	}
	if name == "codex-acp" {
		t.StopReason = "cancelled"
	}
	return t
}

// DenyMatching returns a permission rule for Client.Decide that denies a
// request whose tool call's title or raw input contains s, and allows any
// other.
func DenyMatching(s string) func(*acp.RequestPermissionRequest) Decision {
	return func(r *acp.RequestPermissionRequest) Decision {
		title, _ := r.ToolCall.Title.Get()
		return Decision{Allow: !strings.Contains(title, s) && !bytes.Contains(r.ToolCall.RawInput, []byte(s))}
	}
}

func js(s string) jsontext.Value { return jsontext.Value(s) }

func obj(v any) jsontext.Value {
	data, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic(err)
	}
	return data
}
