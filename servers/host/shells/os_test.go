package shells

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bridgekit/bridgekit/gen/harn"
)

// TestRealOS describes the machine running the test and runs a command in
// every shell it reports available.
func TestRealOS(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.ProcessListShells(context.Background(), nil, &harn.NoArgs{})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, s := range resp.Shells {
		t.Logf("%-10s %-8v %-10s %s %q", s.ID, s.Available, s.Source, s.Path, s.DefaultArgs)
		if s.ID == "" || s.Path == "" || s.Label == "" {
			t.Errorf("incomplete shell %+v", s)
		}
		if s.Platform != runtime.GOOS {
			t.Errorf("%s: platform %q, want %q", s.ID, s.Platform, runtime.GOOS)
		}
		if !s.Available {
			continue
		}
		command, want := "printf ok", "ok"
		k := classify(pathOps{windows: runtime.GOOS == "windows"}.stem(s.Path))
		if k == kindCmd || k == kindPwsh || k == kindWinPowerShell {
			command = "echo ok" // printf is not a builtin there; output ends in CRLF
		}
		inv, err := p.ProcessShellInvocation(context.Background(), nil, &harn.ShellInvocationRequest{ShellID: &s.ID, Command: &command})
		if err != nil {
			t.Errorf("%s: %v", s.ID, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, inv.Program, inv.Args...).Output()
		cancel()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Logf("stderr: %s", ee.Stderr)
			}
			t.Errorf("%s: %s %q: %v", s.ID, inv.Program, inv.Args, err)
			continue
		}
		if got := string(out); got != want && strings.TrimSpace(got) != want {
			t.Errorf("%s: %s %q printed %q, want %q", s.ID, inv.Program, inv.Args, got, want)
		}
		ran++
	}
	if ran == 0 {
		t.Skip("no available shell on this machine")
	}
}

func TestRealLoginShell(t *testing.T) {
	sh, err := OS().LoginShell()
	if err != nil {
		t.Skipf("no login shell: %v", err)
	}
	if !strings.HasPrefix(sh, "/") {
		t.Errorf("login shell %q is not absolute", sh)
	}
}

func TestPasswdShell(t *testing.T) {
	const passwd = `# local users
root:x:0:0:root:/root:/bin/bash
+nis-user::1000:1000:::/bin/nis
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin

short:x:7:7
u:x:1000:1000:User,,,:/home/u:/usr/bin/zsh
blank:x:1001:1001::/home/b:
`
	for _, tt := range []struct{ uid, want string }{
		{"0", "/bin/bash"},
		{"1000", "/usr/bin/zsh"},
		{"1001", "/bin/sh"},
		{"1", "/usr/sbin/nologin"},
	} {
		got, err := passwdShell([]byte(passwd), tt.uid)
		if err != nil || got != tt.want {
			t.Errorf("uid %s: %q, %v; want %q", tt.uid, got, err, tt.want)
		}
	}
	for _, uid := range []string{"7", "4242"} {
		if got, err := passwdShell([]byte(passwd), uid); !errors.Is(err, errNoLoginShell) {
			t.Errorf("uid %s: %q, %v; want errNoLoginShell", uid, got, err)
		}
	}
}
