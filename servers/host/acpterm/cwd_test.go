package acpterm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/acp"
	"github.com/bridgekit/bridgekit/runtime/wire"
	"github.com/bridgekit/bridgekit/servers/host/files"
	"github.com/bridgekit/bridgekit/servers/host/terminal"
)

// TestCwdRule: a terminal.allow rule with a cwd allows its command only in
// the directories it names, decided on the directory the kernel reached
// (links followed), which is the one the command starts in (issue 33,
// finding 5: `git status` may run in docs/, not in src/ where the
// runtime writes).
func TestCwdRule(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX commands")
	}
	s, events := testServer(t)
	c, err := terminal.NewCommandRules([]terminal.CommandRule{{Pattern: "pwd", Cwd: []string{"docs", "site/**"}}, {Pattern: "true", Cwd: []string{"."}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Commands = c
	root := s.Files.WS.Dir()
	for _, d := range []string{"docs", "src", "site/a/b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("src", filepath.Join(root, "to-src"))
	os.Symlink("docs", filepath.Join(root, "to-docs"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		cmd, cwd string // cwd "" is none: the workspace's root
		want     bool
		out      string
	}{
		{"pwd", "docs", true, "/docs\n"},
		{"pwd", filepath.Join(root, "site/a/b"), true, "/site/a/b\n"},
		{"pwd", "site", true, "/site\n"},
		{"pwd", "to-docs", true, "/docs\n"},
		{"pwd", "src", false, ""},
		{"pwd", "to-src", false, ""},
		{"pwd", "", false, ""},
		{"true", "", true, ""},
		{"true", ".", true, ""},
		{"true", "docs", false, ""},
	} {
		req := &acp.CreateTerminalRequest{SessionID: "s", Command: tc.cmd}
		if tc.cwd != "" {
			req.Cwd = wire.Some(tc.cwd)
		}
		res, err := s.Create(ctx, req)
		if !tc.want {
			if code(err) != files.CodeDenied {
				t.Errorf("%s in %q: %v, want a denial", tc.cmd, tc.cwd, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s in %q: %v", tc.cmd, tc.cwd, err)
			continue
		}
		w, err := s.WaitForExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: res.TerminalID})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(mustGet(w.Extra.Get("combined"))); tc.out != "" && got != `"`+filepath.Join(root, tc.out[1:len(tc.out)-1])+`\n"` {
			t.Errorf("%s in %q ran in %s", tc.cmd, tc.cwd, got)
		}
		if _, err := s.Release(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: res.TerminalID}); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range events() {
		if !e.Allowed && e.Reason == "" {
			t.Errorf("event %+v", e)
		}
	}
}
