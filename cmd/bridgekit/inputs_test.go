package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/frames"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/store"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/tracelog"
	"github.com/bridgekit/bridgekit/cmd/bridgekit/internal/traffic"
)

// The subcommands that read recorded traffic (inspect, validate, replay)
// read one recorded session alike in each form it takes: a trace, a
// store, a recording, a tee log (both directions' NDJSON) and a peer's
// stdout (one direction's); and refuse alike, with the same reason naming
// the file, what is none of them.
func TestEveryReaderReadsTheSameInputs(t *testing.T) {
	agent, _, _ := testBins(t)
	trace := recordSession(t, "read notes.txt", agent)
	recs := readTrace(t, trace)
	dir := t.TempDir()
	var tee, rec, out strings.Builder
	n, nOut := 0, 0
	for _, r := range recs {
		if r.Type != tracelog.TypeFrame {
			continue
		}
		n++
		line := string(r.Line())
		tee.WriteString(line + "\n")
		d := "send"
		if r.Dir == frames.Out {
			d = "recv"
			out.WriteString(line + "\n")
			nOut++
		}
		b, _ := json.Marshal(map[string]any{"seq": n, "ms": n, "dir": d, "line": line})
		rec.WriteString(string(b) + "\n")
	}
	db := filepath.Join(dir, "store.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	st.Close()
	forms := []struct {
		name   string
		frames int
		replay bool // both directions: replay can play it, and nothing is amiss
		// (one direction's replies answer no request seen, its requests
		// are never answered: problems every reader reports alike)
	}{
		{trace, n, true}, {db, n, true},
		{filepath.Join(dir, "recording.jsonl"), n, true},
		{filepath.Join(dir, "tee.log"), n, true},
		{filepath.Join(dir, "agent-stdout.log"), nOut, false},
	}
	for name, data := range map[string]string{"recording.jsonl": rec.String(), "tee.log": tee.String(), "agent-stdout.log": out.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, form := range forms {
		t.Run("reads "+filepath.Base(form.name), func(t *testing.T) {
			status, stdout, stderr := runCmd(t, "", "validate", "--json", form.name)
			var sum struct {
				Summary struct{ Frames, Problems int } `json:"summary"`
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || status != min(sum.Summary.Problems, 1) || sum.Summary.Frames != form.frames ||
				form.replay != (sum.Summary.Problems == 0) {
				t.Errorf("validate: status %d, summary %+v, want %d frames\n%s%s", status, sum.Summary, form.frames, stdout, stderr)
			}
			p := startInspect(t, form.name)
			// The page is served at once; the file is read into it as it
			// serves. Wait for its end.
			var ss []store.Session
			for deadline := time.Now().Add(30 * time.Second); ; {
				getJSON(t, p.base+"/api/sessions", &ss)
				if len(ss) == 1 && ss[0].Ended != nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond) // polling the page for the file's end
			}
			if len(ss) != 1 || ss[0].Ended == nil || ss[0].Frames != form.frames || ss[0].Problems != sum.Summary.Problems {
				t.Errorf("inspect lists %+v, want one ended session of %d frames and %d problems, as validate found", ss, form.frames, sum.Summary.Problems)
			}
			p.cmd.Process.Signal(syscall.SIGINT)
			<-p.done
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("inspect: %v\n%s", err, p.errs.String())
			}
			if form.replay {
				status, stdout, stderr := runCmd(t, "", "replay", form.name, "--", agent)
				if status != 0 || !strings.Contains(stdout, "no differences (5 frames sent, 8 compared)") {
					t.Errorf("replay: status %d\n%s%s", status, stdout, stderr)
				}
			}
		})
	}

	if err := os.Mkdir(filepath.Join(dir, "a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"binary.jsonl": "\x00\x01\x02ELF",
		"agent.log":    "2026-12-06 starting agent\nready\n",
		"object.json":  `{"name":"not a frame"}` + "\n",
		"array.json":   `[{"jsonrpc":"2.0","method":"x"}]` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"missing.jsonl", "a-directory", "binary.jsonl", "agent.log", "object.json", "array.json"} {
		path := filepath.Join(dir, name)
		_, why := traffic.Sniff(path)
		if why == nil {
			t.Fatalf("%s is taken for traffic", name)
		}
		for _, args := range [][]string{
			{"validate", path},
			{"inspect", "--addr", "127.0.0.1:0", path},
			{"replay", path, "--", agent},
		} {
			status, stdout, stderr := runCmd(t, "", args...)
			if status != 1 || !strings.Contains(stderr, why.Error()) || strings.Contains(stderr, "inspector on") || stdout != "" {
				t.Errorf("%s %s: status %d, stdout %q, stderr %q; want 1 and %q", args[0], name, status, stdout, stderr, why)
			}
		}
	}
}

// inspect checks every frame of a trace as it loads it: a frame edited by
// hand into a bad one is flagged though the file says it is fine, and a
// problem the file claims of a good frame is not shown.
func TestInspectChecksAHandEditedTrace(t *testing.T) {
	agent, _, _ := testBins(t)
	trace := recordSession(t, "read notes.txt", agent)
	recs := readTrace(t, trace)
	var edited, claimed int64
	var b []byte
	for _, r := range recs {
		if r.Type == tracelog.TypeFrame && r.Method == "session/prompt" && r.Kind == frames.Request && edited == 0 {
			var v map[string]any
			if err := json.Unmarshal(r.Line(), &v); err != nil {
				t.Fatal(err)
			}
			v["params"].(map[string]any)["prompt"] = 42
			line, _ := json.Marshal(v)
			r.SetLine(line)
			r.Size, r.Problems, edited = len(line), nil, r.Seq
		} else if r.Type == tracelog.TypeFrame && r.Method == "initialize" && claimed == 0 {
			r.Problems, claimed = []frames.Problem{{Code: "schema", Pointer: "/params", Message: "a problem the file claims"}}, r.Seq
		}
		var err error
		if b, err = r.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "edited.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if edited == 0 || claimed == 0 {
		t.Fatalf("no prompt or initialize to edit in %s", trace)
	}
	p := startInspect(t, path)
	defer func() { p.cmd.Process.Signal(syscall.SIGINT); <-p.done; p.cmd.Wait() }()
	var ss []store.Session
	for deadline := time.Now().Add(30 * time.Second); len(ss) == 0 || ss[0].Ended == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the trace never loaded: %+v\n%s", ss, p.errs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the page for the file's end
		getJSON(t, p.base+"/api/sessions", &ss)
	}
	var got []*tracelog.Record
	getJSON(t, p.base+"/api/records?session="+ss[0].ID, &got)
	for _, r := range got {
		switch r.Seq {
		case edited:
			if len(r.Problems) == 0 || !strings.HasPrefix(r.Problems[0].Pointer, "/params/prompt") {
				t.Errorf("the edited prompt: problems %+v, want one at /params/prompt", r.Problems)
			}
		case claimed:
			if len(r.Problems) != 0 {
				t.Errorf("initialize: problems %+v, want none (the file's claim is not the check's)", r.Problems)
			}
		}
	}
}
