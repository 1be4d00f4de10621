package shells

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/bridgekit/bridgekit/gen/harn"
	"github.com/bridgekit/bridgekit/runtime/rpc"
	"github.com/go-json-experiment/json"
)

func ptr[T any](v T) *T { return &v }

func call(session string) *harn.HostCallParams {
	if session == "" {
		return &harn.HostCallParams{Name: "process.list_shells"}
	}
	return &harn.HostCallParams{Name: "process.list_shells", SessionID: &session}
}

func mustNew(t *testing.T, cfg Config) *Provider {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func list(t *testing.T, p *Provider, session string) *harn.ListShellsResponse {
	t.Helper()
	resp, err := p.ProcessListShells(context.Background(), call(session), &harn.NoArgs{})
	if err != nil {
		t.Fatalf("ProcessListShells: %v", err)
	}
	return resp
}

// checkErr asserts that err matches sentinel, unwraps to a *rpc.Error
// with code, and (when shellID is non-nil) carries data {"shell_id": id}.
func checkErr(t *testing.T, err, sentinel error, code int64, shellID *string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, %v) = false", err, sentinel)
	}
	for _, other := range []error{ErrUnknownShell, ErrNoShell, ErrShellUnavailable, ErrInvalidInvocation} {
		if other != sentinel && errors.Is(err, other) {
			t.Errorf("error %v also matches %v", err, other)
		}
	}
	var re *rpc.Error
	if !errors.As(err, &re) {
		t.Fatalf("errors.As(%v, *rpc.Error) = false", err)
	}
	if re.Code != code {
		t.Errorf("code = %d, want %d", re.Code, code)
	}
	if code == rpc.CodeInvalidParams && !errors.Is(err, rpc.ErrInvalidParams) {
		t.Errorf("errors.Is(%v, rpc.ErrInvalidParams) = false", err)
	}
	if re.Message == "" {
		t.Errorf("empty JSON-RPC message")
	}
	if shellID != nil {
		var data map[string]string
		if err := json.Unmarshal(re.Data, &data); err != nil {
			t.Fatalf("data %s: %v", re.Data, err)
		}
		if want := map[string]string{"shell_id": *shellID}; !reflect.DeepEqual(data, want) {
			t.Errorf("data = %v, want %v", data, want)
		}
	}
}

// brief is the part of a shell most tests compare.
type brief struct {
	ID, Label, Path string
	Available       bool
	Source          harn.ShellSource
}

func briefs(ss []harn.Shell) []brief {
	out := make([]brief, len(ss))
	for i, s := range ss {
		out[i] = brief{s.ID, s.Label, s.Path, s.Available, s.Source}
	}
	return out
}

func linuxBox() *fakePlatform {
	return &fakePlatform{
		goos:  "linux",
		env:   map[string]string{"SHELL": "/usr/bin/zsh", "HOME": "/home/u"},
		login: "/bin/bash",
		links: map[string]string{
			"/bin":           "usr/bin", // merged /usr
			"/usr/bin/sh":    "dash",
			"/usr/bin/rbash": "bash",
		},
		exec: set("/usr/bin/zsh", "/usr/bin/bash", "/usr/bin/dash", "/usr/local/bin/bash", "/usr/bin/tmux", "/usr/bin/tcsh"),
		files: map[string]string{"/etc/shells": `# /etc/shells: valid login shells
/bin/sh
/usr/bin/sh
/bin/bash
/usr/bin/bash   # the login shell again, through the /bin link

/bin/rbash
/usr/bin/zsh
/bin/zsh
/usr//bin/zsh
	# indented comment
/usr/bin/fish
/usr/local/bin/bash
   /bin/dash
tcsh
/usr/bin/tcsh
/usr/bin/tmux
`},
	}
}

func TestDiscoveryLinux(t *testing.T) {
	posix := func(b brief) harn.Shell {
		return harn.Shell{ID: b.ID, Label: b.Label, Path: b.Path, Platform: "linux", Available: b.Available,
			SupportsLogin: true, SupportsInteractive: true,
			DefaultArgs: []string{"-c"}, LoginArgs: []string{"-l", "-c"}, Source: b.Source}
	}
	want := []harn.Shell{
		posix(brief{"zsh", "zsh", "/usr/bin/zsh", true, harn.ShellSourceEnv}),
		posix(brief{"bash", "bash", "/bin/bash", true, harn.ShellSourceLogin}),
		posix(brief{"sh", "sh", "/bin/sh", true, harn.ShellSourceEtcShells}),
		posix(brief{"rbash", "rbash", "/bin/rbash", true, harn.ShellSourceEtcShells}),
		posix(brief{"fish", "fish", "/usr/bin/fish", false, harn.ShellSourceEtcShells}),
		posix(brief{"bash-2", "bash (/usr/local/bin/bash)", "/usr/local/bin/bash", true, harn.ShellSourceEtcShells}),
		posix(brief{"dash", "dash", "/bin/dash", true, harn.ShellSourceEtcShells}),
		{ID: "tcsh", Label: "tcsh", Path: "/usr/bin/tcsh", Platform: "linux", Available: true,
			SupportsLogin: false, SupportsInteractive: true,
			DefaultArgs: []string{"-c"}, LoginArgs: []string{}, Source: harn.ShellSourceEtcShells},
		{ID: "tmux", Label: "tmux", Path: "/usr/bin/tmux", Platform: "linux", Available: true,
			SupportsLogin: false, SupportsInteractive: false,
			DefaultArgs: []string{"-c"}, LoginArgs: []string{}, Source: harn.ShellSourceEtcShells},
	}
	p := mustNew(t, Config{Platform: linuxBox()})
	resp := list(t, p, "")
	if !reflect.DeepEqual(resp.Shells, want) {
		t.Errorf("shells:\n got %+v\nwant %+v", briefs(resp.Shells), briefs(want))
		for i := range min(len(resp.Shells), len(want)) {
			if !reflect.DeepEqual(resp.Shells[i], want[i]) {
				t.Errorf("shell %d:\n got %+v\nwant %+v", i, resp.Shells[i], want[i])
			}
		}
	}
	if resp.DefaultShellID == nil || *resp.DefaultShellID != "zsh" {
		t.Errorf("default_shell_id = %v, want zsh", resp.DefaultShellID)
	}
	for _, s := range resp.Shells {
		if s.LoginArgs == nil || s.DefaultArgs == nil {
			t.Errorf("%s: nil argument list would encode as null", s.ID)
		}
	}
}

func TestDefaultIsFirstAvailable(t *testing.T) {
	tests := []struct {
		name string
		edit func(*fakePlatform)
		want string
	}{
		{"env wins", func(*fakePlatform) {}, "zsh"},
		{"env missing: login", func(f *fakePlatform) { f.env["SHELL"] = "/opt/nowhere/zsh" }, "bash"},
		{"env unset, no login: etc_shells", func(f *fakePlatform) { delete(f.env, "SHELL"); f.login = "" }, "sh"},
		{"relative $SHELL looked up", func(f *fakePlatform) {
			f.env["SHELL"] = "zsh"
			f.lookPath = map[string]string{"zsh": "/usr/bin/zsh"}
		}, "zsh"},
		{"relative $SHELL not found: dropped", func(f *fakePlatform) { f.env["SHELL"] = "zsh" }, "bash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := linuxBox()
			tt.edit(f)
			p := mustNew(t, Config{Platform: f})
			resp := list(t, p, "")
			if resp.DefaultShellID == nil || *resp.DefaultShellID != tt.want {
				t.Fatalf("default = %v, want %s (shells %+v)", resp.DefaultShellID, tt.want, briefs(resp.Shells))
			}
			if tt.name == "env missing: login" {
				if s := resp.Shells[0]; s.ID != "zsh" || s.Available || s.Source != harn.ShellSourceEnv {
					t.Errorf("missing $SHELL should be listed unavailable first, got %+v", s)
				}
			}
		})
	}
}

func TestFallback(t *testing.T) {
	tests := []struct {
		name        string
		f           *fakePlatform
		want        []brief
		wantDefault *string
	}{
		{
			name:        "empty environment, /bin/sh exists",
			f:           &fakePlatform{goos: "linux", exec: set("/bin/sh")},
			want:        []brief{{"sh", "sh", "/bin/sh", true, harn.ShellSourceFallback}},
			wantDefault: ptr("sh"),
		},
		{
			name: "empty environment, no /bin/sh",
			f:    &fakePlatform{goos: "linux"},
			want: []brief{{"sh", "sh", "/bin/sh", false, harn.ShellSourceFallback}},
		},
		{
			name: "only a missing $SHELL",
			f:    &fakePlatform{goos: "darwin", env: map[string]string{"SHELL": "/bin/zsh"}, exec: set("/bin/sh")},
			want: []brief{
				{"zsh", "zsh", "/bin/zsh", false, harn.ShellSourceEnv},
				{"sh", "sh", "/bin/sh", true, harn.ShellSourceFallback},
			},
			wantDefault: ptr("sh"),
		},
		{
			name: "missing /bin/sh already listed is not repeated",
			f:    &fakePlatform{goos: "linux", files: map[string]string{"/etc/shells": "/bin/sh\n"}},
			want: []brief{{"sh", "sh", "/bin/sh", false, harn.ShellSourceEtcShells}},
		},
		{
			name: "no fallback when something is available",
			f:    &fakePlatform{goos: "linux", login: "/bin/zsh", exec: set("/bin/zsh", "/bin/sh")},
			want: []brief{{"zsh", "zsh", "/bin/zsh", true, harn.ShellSourceLogin}},

			wantDefault: ptr("zsh"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNew(t, Config{Platform: tt.f})
			resp := list(t, p, "")
			if got := briefs(resp.Shells); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("shells = %+v, want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(resp.DefaultShellID, tt.wantDefault) {
				t.Errorf("default = %v, want %v", resp.DefaultShellID, tt.wantDefault)
			}
			def, err := p.ProcessGetDefaultShell(context.Background(), call(""), &harn.NoArgs{})
			inv, ierr := p.ProcessShellInvocation(context.Background(), call(""), &harn.ShellInvocationRequest{Command: ptr("true")})
			if tt.wantDefault == nil {
				checkErr(t, err, ErrNoShell, -32000, nil)
				checkErr(t, ierr, ErrNoShell, -32000, nil)
				return
			}
			if err != nil || def.ID != *tt.wantDefault {
				t.Errorf("get default = %+v, %v", def, err)
			}
			if ierr != nil || inv.Shell.ID != *tt.wantDefault {
				t.Errorf("default invocation = %+v, %v", inv, ierr)
			}
		})
	}
}

func TestConfigured(t *testing.T) {
	f := linuxBox()
	f.exec["/opt/dev/bin/bash"] = true
	p := mustNew(t, Config{Platform: f, Shells: []Configured{
		{ID: "dev", Label: "Dev bash", Path: "/opt/dev/bin/bash", DefaultArgs: []string{"--norc", "-c"}},
		{Path: "/usr/bin/zsh"},
		{ID: "bash-nologin", Path: "/bin/bash", LoginArgs: []string{}},
		{ID: "bash-login", Path: "/bin/bash"},
		{ID: "ghost", Path: "/opt/ghost/bin/ghostsh", DefaultArgs: []string{"run"}, LoginArgs: []string{"--login", "run"}},
		{Path: "zsh"}, // relative, not on the fake search path
	}})
	resp := list(t, p, "")
	got := briefs(resp.Shells)
	want := []brief{
		{"dev", "Dev bash", "/opt/dev/bin/bash", true, harn.ShellSourceConfigured},
		{"zsh", "zsh", "/usr/bin/zsh", true, harn.ShellSourceConfigured},
		{"bash-nologin", "bash", "/bin/bash", true, harn.ShellSourceConfigured},
		{"bash-login", "bash", "/bin/bash", true, harn.ShellSourceConfigured},
		{"ghost", "ghostsh", "/opt/ghost/bin/ghostsh", false, harn.ShellSourceConfigured},
		{"zsh-2", "zsh (zsh)", "zsh", false, harn.ShellSourceConfigured},
		// $SHELL (/usr/bin/zsh) and the login shell (/bin/bash) were configured already.
		{"sh", "sh", "/bin/sh", true, harn.ShellSourceEtcShells},
		{"rbash", "rbash", "/bin/rbash", true, harn.ShellSourceEtcShells},
		{"fish", "fish", "/usr/bin/fish", false, harn.ShellSourceEtcShells},
		{"bash", "bash", "/usr/local/bin/bash", true, harn.ShellSourceEtcShells},
		{"dash", "dash", "/bin/dash", true, harn.ShellSourceEtcShells},
		{"tcsh", "tcsh", "/usr/bin/tcsh", true, harn.ShellSourceEtcShells},
		{"tmux", "tmux", "/usr/bin/tmux", true, harn.ShellSourceEtcShells},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shells:\n got %+v\nwant %+v", got, want)
	}
	if *resp.DefaultShellID != "dev" {
		t.Errorf("default = %s, want dev", *resp.DefaultShellID)
	}
	byID := map[string]harn.Shell{}
	for _, s := range resp.Shells {
		byID[s.ID] = s
	}
	if s := byID["dev"]; !reflect.DeepEqual(s.DefaultArgs, []string{"--norc", "-c"}) || !reflect.DeepEqual(s.LoginArgs, []string{"-l", "-c"}) || !s.SupportsLogin {
		t.Errorf("dev args: %+v", s)
	}
	if s := byID["bash-nologin"]; s.SupportsLogin || len(s.LoginArgs) != 0 || s.LoginArgs == nil {
		t.Errorf("bash-nologin: %+v", s)
	}
	if s := byID["ghost"]; !s.SupportsLogin || s.SupportsInteractive || !reflect.DeepEqual(s.LoginArgs, []string{"--login", "run"}) {
		t.Errorf("ghost: %+v", s)
	}

	inv, err := p.ProcessShellInvocation(context.Background(), nil, &harn.ShellInvocationRequest{Command: ptr("echo hi"), Interactive: ptr(true)})
	if err != nil || !reflect.DeepEqual(inv.Args, []string{"--norc", "-i", "-c", "echo hi"}) || inv.CommandArgIndex != 3 {
		t.Errorf("dev interactive invocation = %+v, %v", inv, err)
	}
	_, err = p.ProcessShellInvocation(context.Background(), nil, &harn.ShellInvocationRequest{ShellID: ptr("bash-nologin"), Command: ptr("x"), Login: ptr(true)})
	checkErr(t, err, ErrInvalidInvocation, -32602, ptr("bash-nologin"))

	// Configuration mistakes are reported by New.
	for _, bad := range [][]Configured{
		{{ID: "a", Path: ""}},
		{{ID: "a", Path: "/bin/sh"}, {ID: "a", Path: "/bin/bash"}},
	} {
		if _, err := New(Config{Platform: f, Shells: bad}); err == nil {
			t.Errorf("New(%+v) succeeded", bad)
		}
	}
}

func TestIDCollisions(t *testing.T) {
	f := &fakePlatform{
		goos: "linux",
		exec: set("/opt/bash/bin/bash", "/opt/odd/bash-2", "/bin/bash", "/usr/local/bin/bash", "/bin/zsh", "/opt/zsh/bin/zsh"),
		files: map[string]string{"/etc/shells": "/opt/odd/bash-2\n/bin/bash\n/usr/local/bin/bash\n" +
			"/bin/bash\n"}, // exact duplicate: dropped, no bash-5
	}
	p := mustNew(t, Config{Platform: f, Shells: []Configured{
		{Path: "/bin/zsh"},                         // derived id "zsh" is reserved below
		{ID: "bash", Path: "/opt/bash/bin/bash"},   // explicit
		{ID: "zsh", Path: "/opt/zsh/bin/zsh"},      // explicit, wins the plain name
		{Label: "Other zsh", Path: "/bin/zsh"},     // configured twice on purpose
		{ID: "bash-3", Path: "/opt/bash/bin/bash"}, // reserves bash-3
	}})
	got := briefs(list(t, p, "").Shells)
	want := []brief{
		{"zsh-2", "zsh (/bin/zsh)", "/bin/zsh", true, harn.ShellSourceConfigured},
		{"bash", "bash", "/opt/bash/bin/bash", true, harn.ShellSourceConfigured},
		{"zsh", "zsh", "/opt/zsh/bin/zsh", true, harn.ShellSourceConfigured},
		{"zsh-3", "Other zsh", "/bin/zsh", true, harn.ShellSourceConfigured},
		{"bash-3", "bash", "/opt/bash/bin/bash", true, harn.ShellSourceConfigured},
		{"bash-2", "bash-2", "/opt/odd/bash-2", true, harn.ShellSourceEtcShells},
		{"bash-4", "bash (/bin/bash)", "/bin/bash", true, harn.ShellSourceEtcShells},
		{"bash-5", "bash (/usr/local/bin/bash)", "/usr/local/bin/bash", true, harn.ShellSourceEtcShells},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shells:\n got %+v\nwant %+v", got, want)
	}
}

func windowsBox() *fakePlatform {
	return &fakePlatform{
		goos: "windows",
		env: map[string]string{
			"SystemRoot":   `C:\WINDOWS`,
			"ComSpec":      `C:\WINDOWS\system32\cmd.exe`,
			"ProgramFiles": `C:\Program Files`,
			"SHELL":        "/usr/bin/bash", // set by MSYS; not a Windows path, ignored
		},
		lookPath: map[string]string{
			"pwsh":       `C:\Program Files\PowerShell\7\pwsh.exe`,
			"powershell": `C:\WINDOWS\System32\WindowsPowerShell\v1.0\powershell.exe`,
			"cmd":        `C:\WINDOWS\system32\cmd.exe`,
		},
		exec: set(`C:\Program Files\PowerShell\7\pwsh.exe`,
			`C:\WINDOWS\System32\WindowsPowerShell\v1.0\powershell.exe`,
			`C:\WINDOWS\system32\cmd.exe`, `C:\WINDOWS\System32\cmd.exe`),
	}
}

func TestDiscoveryWindows(t *testing.T) {
	ps := []string{"-NoProfile", "-Command"}
	win := func(id, label, path string, args []string, src harn.ShellSource) harn.Shell {
		return harn.Shell{ID: id, Label: label, Path: path, Platform: "windows", Available: true,
			DefaultArgs: args, LoginArgs: []string{}, Source: src}
	}
	tests := []struct {
		name string
		edit func(*fakePlatform)
		want []harn.Shell
	}{
		{"all three", func(*fakePlatform) {}, []harn.Shell{
			win("pwsh", "PowerShell 7", `C:\Program Files\PowerShell\7\pwsh.exe`, ps, harn.ShellSourceHost),
			win("powershell", "Windows PowerShell", `C:\WINDOWS\System32\WindowsPowerShell\v1.0\powershell.exe`, ps, harn.ShellSourceHost),
			win("cmd", "Command Prompt", `C:\WINDOWS\system32\cmd.exe`, []string{"/C"}, harn.ShellSourceEnv),
		}},
		{"nothing on PATH, no ComSpec: install locations", func(f *fakePlatform) {
			f.lookPath = nil
			delete(f.env, "ComSpec")
		}, []harn.Shell{
			win("pwsh", "PowerShell 7", `C:\Program Files\PowerShell\7\pwsh.exe`, ps, harn.ShellSourceHost),
			win("powershell", "Windows PowerShell", `C:\WINDOWS\System32\WindowsPowerShell\v1.0\powershell.exe`, ps, harn.ShellSourceHost),
			win("cmd", "Command Prompt", `C:\WINDOWS\System32\cmd.exe`, []string{"/C"}, harn.ShellSourceHost),
		}},
		{"store pwsh, cmd from PATH", func(f *fakePlatform) {
			f.lookPath["pwsh"] = `C:\Users\u\AppData\Local\Microsoft\WindowsApps\pwsh.exe`
			f.exec[f.lookPath["pwsh"]] = true
			delete(f.lookPath, "powershell")
			delete(f.env, "ComSpec")
			f.exec[`C:\WINDOWS\System32\WindowsPowerShell\v1.0\powershell.exe`] = false
		}, []harn.Shell{
			win("pwsh", "PowerShell", `C:\Users\u\AppData\Local\Microsoft\WindowsApps\pwsh.exe`, ps, harn.ShellSourceHost),
			win("cmd", "Command Prompt", `C:\WINDOWS\system32\cmd.exe`, []string{"/C"}, harn.ShellSourceHost),
		}},
		{"nothing at all: fallback cmd", func(f *fakePlatform) {
			f.lookPath, f.exec, f.env = nil, nil, nil
		}, []harn.Shell{
			{ID: "cmd", Label: "Command Prompt", Path: `C:\Windows\System32\cmd.exe`, Platform: "windows",
				DefaultArgs: []string{"/C"}, LoginArgs: []string{}, Source: harn.ShellSourceFallback},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := windowsBox()
			tt.edit(f)
			p := mustNew(t, Config{Platform: f})
			resp := list(t, p, "")
			if !reflect.DeepEqual(resp.Shells, tt.want) {
				t.Errorf("shells:\n got %+v\nwant %+v", resp.Shells, tt.want)
			}
		})
	}

	p := mustNew(t, Config{Platform: windowsBox(), Shells: []Configured{{Path: `C:/Program Files/Git/bin/BASH.EXE`}}})
	resp := list(t, p, "")
	if got := resp.Shells[0]; got.ID != "bash" || got.Path != `C:\Program Files\Git\bin\BASH.EXE` || !got.SupportsLogin ||
		!reflect.DeepEqual(got.LoginArgs, []string{"-l", "-c"}) || got.Platform != "windows" {
		t.Errorf("Git Bash = %+v", got)
	}
	if *resp.DefaultShellID != "pwsh" {
		t.Errorf("default = %s (bash is not executable in the fake), want pwsh", *resp.DefaultShellID)
	}

	ctx := context.Background()
	cmd := `dir "C:\Program Files" & echo done`
	for _, tt := range []struct {
		id    string
		args  []string
		index int64
	}{
		{"pwsh", []string{"-NoProfile", "-Command", cmd}, 2},
		{"powershell", []string{"-NoProfile", "-Command", cmd}, 2},
		{"cmd", []string{"/C", cmd}, 1},
	} {
		inv, err := p.ProcessShellInvocation(ctx, nil, &harn.ShellInvocationRequest{ShellID: ptr(tt.id), Command: ptr(cmd)})
		if err != nil || !reflect.DeepEqual(inv.Args, tt.args) || inv.CommandArgIndex != tt.index || inv.Shell.ID != tt.id {
			t.Errorf("%s: %+v, %v", tt.id, inv, err)
		}
		_, err = p.ProcessShellInvocation(ctx, nil, &harn.ShellInvocationRequest{ShellID: ptr(tt.id), Command: ptr(cmd), Login: ptr(true)})
		checkErr(t, err, ErrInvalidInvocation, -32602, ptr(tt.id))
		_, err = p.ProcessShellInvocation(ctx, nil, &harn.ShellInvocationRequest{ShellID: ptr(tt.id), Command: ptr(cmd), Interactive: ptr(true)})
		checkErr(t, err, ErrInvalidInvocation, -32602, ptr(tt.id))
	}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, Config{Platform: linuxBox()})
	defaultOf := func(session string) string {
		t.Helper()
		s, err := p.ProcessGetDefaultShell(ctx, call(session), &harn.NoArgs{})
		if err != nil {
			t.Fatalf("get default (%q): %v", session, err)
		}
		if l := list(t, p, session); *l.DefaultShellID != s.ID {
			t.Fatalf("list default %s != get default %s", *l.DefaultShellID, s.ID)
		}
		return s.ID
	}
	setDefault := func(session, id string) (*harn.Shell, error) {
		return p.ProcessSetDefaultShell(ctx, call(session), &harn.SetDefaultShellRequest{ShellID: id})
	}

	for _, s := range []string{"", "a", "b"} {
		if got := defaultOf(s); got != "zsh" {
			t.Errorf("initial default of %q = %s", s, got)
		}
	}
	s, err := setDefault("a", "bash")
	if err != nil || s.ID != "bash" || s.Path != "/bin/bash" {
		t.Fatalf("set a=bash: %+v, %v", s, err)
	}
	if _, err := setDefault("b", "fish"); err != nil { // listed though unavailable
		t.Fatalf("set b=fish: %v", err)
	}
	if got := [3]string{defaultOf(""), defaultOf("a"), defaultOf("b")}; got != [3]string{"zsh", "bash", "fish"} {
		t.Errorf("defaults = %v", got)
	}
	// The default is what a shell-less invocation uses; fish is not available.
	inv, err := p.ProcessShellInvocation(ctx, call("a"), &harn.ShellInvocationRequest{Command: ptr("ls")})
	if err != nil || inv.Program != "/bin/bash" {
		t.Errorf("invocation in a: %+v, %v", inv, err)
	}
	_, err = p.ProcessShellInvocation(ctx, call("b"), &harn.ShellInvocationRequest{Command: ptr("ls")})
	checkErr(t, err, ErrShellUnavailable, -32000, ptr("fish"))

	// Unknown ids leave the selection alone.
	for _, id := range []string{"nope", "", "ZSH"} {
		_, err := setDefault("a", id)
		checkErr(t, err, ErrUnknownShell, -32602, ptr(id))
	}
	_, err = p.ProcessSetDefaultShell(ctx, call("a"), nil)
	checkErr(t, err, ErrUnknownShell, -32602, ptr(""))
	if got := defaultOf("a"); got != "bash" {
		t.Errorf("after failed sets a = %s", got)
	}

	// A session without id and a nil call share the "" session.
	if _, err := p.ProcessSetDefaultShell(ctx, nil, &harn.SetDefaultShellRequest{ShellID: "dash"}); err != nil {
		t.Fatal(err)
	}
	if got := defaultOf(""); got != "dash" {
		t.Errorf("default of \"\" = %s", got)
	}

	p.ForgetSession("a")
	if got := defaultOf("a"); got != "zsh" {
		t.Errorf("forgotten a = %s", got)
	}
}

// A peer that opens session after session (a session-id flood) cannot
// grow the provider: past MaxSessions, the least recently used session's
// selection is forgotten and that session sees the initial default again.
func TestSessionSelectionsAreBounded(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, Config{Platform: linuxBox(), MaxSessions: 3})
	def := func(session string) string {
		t.Helper()
		s, err := p.ProcessGetDefaultShell(ctx, call(session), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	set := func(session string) {
		t.Helper()
		if _, err := p.ProcessSetDefaultShell(ctx, call(session), &harn.SetDefaultShellRequest{ShellID: "bash"}); err != nil {
			t.Fatal(err)
		}
	}
	set("a")
	set("b")
	set("c")
	if got := def("a"); got != "bash" { // a is now the most recently used
		t.Fatalf("a = %s", got)
	}
	set("d") // forgets b, the least recently used
	if got := [4]string{def("a"), def("b"), def("c"), def("d")}; got != [4]string{"bash", "zsh", "bash", "bash"} {
		t.Fatalf("after a fourth session: %v", got)
	}
	for i := range 100_000 {
		set(fmt.Sprint("flood-", i))
	}
	if got := [2]string{def("a"), def("flood-99999")}; got != [2]string{"zsh", "bash"} {
		t.Fatalf("after the flood: %v", got)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100_000 {
		set(fmt.Sprint("more-", i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 1<<20 {
		t.Fatalf("100000 more sessions grew the heap by %d bytes", grew)
	}
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	f := linuxBox()
	p := mustNew(t, Config{Platform: f})
	if _, err := p.ProcessSetDefaultShell(ctx, call("a"), &harn.SetDefaultShellRequest{ShellID: "bash-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ProcessSetDefaultShell(ctx, call("b"), &harn.SetDefaultShellRequest{ShellID: "fish"}); err != nil {
		t.Fatal(err)
	}
	// Discovery ran once: changes are invisible until Refresh.
	f.exec["/usr/bin/fish"] = true
	f.files["/etc/shells"] += "/usr/local/bin/nu\n"
	f.exec["/usr/local/bin/nu"] = true
	if s := p.Shells(); len(s) != 9 || s[4].Available {
		t.Fatalf("before refresh: %+v", briefs(s))
	}
	p.Refresh()
	s := p.Shells()
	if len(s) != 10 || !s[4].Available || s[9].ID != "nu" || s[9].SupportsLogin {
		t.Fatalf("after refresh: %+v", briefs(s))
	}
	// Selections survive Refresh while their id exists.
	if d, _ := p.ProcessGetDefaultShell(ctx, call("b"), nil); d.ID != "fish" {
		t.Errorf("b = %s", d.ID)
	}
	f.files["/etc/shells"] = "/bin/sh\n"
	p.Refresh()
	if d, _ := p.ProcessGetDefaultShell(ctx, call("a"), nil); d.ID != "zsh" {
		t.Errorf("a after its shell vanished = %s, want zsh", d.ID)
	}
	// Returned shells are copies.
	s = p.Shells()
	s[0].DefaultArgs[0] = "mutated"
	if p.Shells()[0].DefaultArgs[0] != "-c" {
		t.Error("Shells shares memory with the provider")
	}
}

func TestInvocation(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, Config{Platform: linuxBox()})
	elvish := harn.Shell{ID: "elvish", Label: "Elvish", Path: "/opt/elvish/bin/elvish", Platform: "linux",
		Available: true, DefaultArgs: []string{"-c"}, LoginArgs: []string{}, Source: harn.ShellSourceHost}
	weird := "printf '%s\\n' \"a b\" 'c'\"'\"'d'; echo $HOME\n\techo `date` && exit 3 # \\ ; | * ?"

	tests := []struct {
		name    string
		session string
		req     harn.ShellInvocationRequest
		program string
		args    []string
		shell   string
	}{
		{"default", "", harn.ShellInvocationRequest{Command: ptr("printf ok")},
			"/usr/bin/zsh", []string{"-c", "printf ok"}, "zsh"},
		{"by id", "", harn.ShellInvocationRequest{ShellID: ptr("bash"), Command: ptr("printf ok")},
			"/bin/bash", []string{"-c", "printf ok"}, "bash"},
		{"explicit false flags", "", harn.ShellInvocationRequest{ShellID: ptr("sh"), Command: ptr("x"), Login: ptr(false), Interactive: ptr(false)},
			"/bin/sh", []string{"-c", "x"}, "sh"},
		{"login", "", harn.ShellInvocationRequest{ShellID: ptr("bash"), Command: ptr("x"), Login: ptr(true)},
			"/bin/bash", []string{"-l", "-c", "x"}, "bash"},
		{"interactive", "", harn.ShellInvocationRequest{ShellID: ptr("dash"), Command: ptr("x"), Interactive: ptr(true)},
			"/bin/dash", []string{"-i", "-c", "x"}, "dash"},
		{"login interactive", "", harn.ShellInvocationRequest{ShellID: ptr("zsh"), Command: ptr("x"), Login: ptr(true), Interactive: ptr(true)},
			"/usr/bin/zsh", []string{"-l", "-i", "-c", "x"}, "zsh"},
		{"csh interactive", "", harn.ShellInvocationRequest{ShellID: ptr("tcsh"), Command: ptr("x"), Interactive: ptr(true)},
			"/usr/bin/tcsh", []string{"-i", "-c", "x"}, "tcsh"},
		{"object unknown to the host", "", harn.ShellInvocationRequest{Shell: &elvish, Command: ptr("x")},
			"/opt/elvish/bin/elvish", []string{"-c", "x"}, "elvish"},
		{"object with matching id", "", harn.ShellInvocationRequest{ShellID: ptr("elvish"), Shell: &elvish, Command: ptr("x")},
			"/opt/elvish/bin/elvish", []string{"-c", "x"}, "elvish"},
		{"session default", "s", harn.ShellInvocationRequest{Command: ptr("x"), Login: ptr(true)},
			"/usr/local/bin/bash", []string{"-l", "-c", "x"}, "bash-2"},
		{"command with spaces, quotes, newlines", "", harn.ShellInvocationRequest{ShellID: ptr("bash"), Command: &weird, Login: ptr(true), Interactive: ptr(true)},
			"/bin/bash", []string{"-l", "-i", "-c", weird}, "bash"},
		{"empty command", "", harn.ShellInvocationRequest{Command: ptr("")},
			"/usr/bin/zsh", []string{"-c", ""}, "zsh"},
	}
	if _, err := p.ProcessSetDefaultShell(ctx, call("s"), &harn.SetDefaultShellRequest{ShellID: "bash-2"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			inv, err := p.ProcessShellInvocation(ctx, call(tt.session), &req)
			if err != nil {
				t.Fatal(err)
			}
			if inv.Program != tt.program || !reflect.DeepEqual(inv.Args, tt.args) || inv.Shell.ID != tt.shell {
				t.Errorf("got %s %q (shell %s), want %s %q (shell %s)", inv.Program, inv.Args, inv.Shell.ID, tt.program, tt.args, tt.shell)
			}
			if i := inv.CommandArgIndex; i != int64(len(inv.Args)-1) || inv.Args[i] != *tt.req.Command {
				t.Errorf("command_arg_index %d does not point at the command in %q", i, inv.Args)
			}
			if inv.Shell.Path != inv.Program || inv.Shell.Label == "" || inv.Shell.Platform == "" {
				t.Errorf("shell object incomplete: %+v", inv.Shell)
			}
		})
	}
	// The caller's object is not modified, and the response does not alias it.
	inv, _ := p.ProcessShellInvocation(ctx, nil, &harn.ShellInvocationRequest{Shell: &elvish, Command: ptr("x")})
	inv.Shell.DefaultArgs[0] = "mutated"
	if elvish.DefaultArgs[0] != "-c" {
		t.Error("response aliases the request's shell")
	}
}

func TestInvocationErrors(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, Config{Platform: linuxBox()})
	gone := harn.Shell{ID: "gone", Path: "/nowhere/sh", Available: false, DefaultArgs: []string{"-c"}, LoginArgs: []string{}}
	odd := harn.Shell{ID: "odd", Path: "/opt/odd", Available: true, SupportsInteractive: true, DefaultArgs: []string{"--eval"}, LoginArgs: []string{}}
	tests := []struct {
		name     string
		req      *harn.ShellInvocationRequest
		sentinel error
		code     int64
		shellID  *string
	}{
		{"nil args", nil, ErrInvalidInvocation, -32602, nil},
		{"missing command", &harn.ShellInvocationRequest{ShellID: ptr("bash")}, ErrInvalidInvocation, -32602, nil},
		{"NUL in command", &harn.ShellInvocationRequest{Command: ptr("a\x00b")}, ErrInvalidInvocation, -32602, nil},
		{"unknown id", &harn.ShellInvocationRequest{ShellID: ptr("pwsh"), Command: ptr("x")}, ErrUnknownShell, -32602, ptr("pwsh")},
		{"id and object disagree", &harn.ShellInvocationRequest{ShellID: ptr("bash"), Shell: &gone, Command: ptr("x")}, ErrInvalidInvocation, -32602, ptr("bash")},
		{"object without path", &harn.ShellInvocationRequest{Shell: &harn.Shell{ID: "p", Available: true}, Command: ptr("x")}, ErrInvalidInvocation, -32602, ptr("p")},
		{"login unsupported", &harn.ShellInvocationRequest{ShellID: ptr("tmux"), Command: ptr("x"), Login: ptr(true)}, ErrInvalidInvocation, -32602, ptr("tmux")},
		{"login unsupported (csh)", &harn.ShellInvocationRequest{ShellID: ptr("tcsh"), Command: ptr("x"), Login: ptr(true)}, ErrInvalidInvocation, -32602, ptr("tcsh")},
		{"interactive unsupported", &harn.ShellInvocationRequest{ShellID: ptr("tmux"), Command: ptr("x"), Interactive: ptr(true)}, ErrInvalidInvocation, -32602, ptr("tmux")},
		{"interactive without -c", &harn.ShellInvocationRequest{Shell: &odd, Command: ptr("x"), Interactive: ptr(true)}, ErrInvalidInvocation, -32602, ptr("odd")},
		{"unavailable listed shell", &harn.ShellInvocationRequest{ShellID: ptr("fish"), Command: ptr("x")}, ErrShellUnavailable, -32000, ptr("fish")},
		{"unavailable object", &harn.ShellInvocationRequest{Shell: &gone, Command: ptr("x")}, ErrShellUnavailable, -32000, ptr("gone")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := p.ProcessShellInvocation(ctx, nil, tt.req)
			if inv != nil {
				t.Errorf("got a response with an error: %+v", inv)
			}
			checkErr(t, err, tt.sentinel, tt.code, tt.shellID)
		})
	}
}

func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, Config{Platform: linuxBox()})
	ids := []string{"zsh", "bash", "sh", "dash", "bash-2"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			session := fmt.Sprintf("s%d", g)
			for i := range 200 {
				id := ids[(g+i)%len(ids)]
				if _, err := p.ProcessSetDefaultShell(ctx, call(session), &harn.SetDefaultShellRequest{ShellID: id}); err != nil {
					t.Error(err)
					return
				}
				if d, err := p.ProcessGetDefaultShell(ctx, call(session), nil); err != nil || d.ID != id {
					t.Errorf("session %s: default %v, %v; want %s", session, d, err, id)
					return
				}
				inv, err := p.ProcessShellInvocation(ctx, call(session), &harn.ShellInvocationRequest{Command: ptr("x")})
				if err != nil || inv.Shell.ID != id {
					t.Errorf("session %s: invocation %v, %v; want %s", session, inv, err, id)
					return
				}
				list(t, p, session)
				if i%50 == 0 {
					p.Refresh()
				}
			}
		})
	}
	wg.Wait()
}

// Session ids of any size cannot grow the provider either: the ids
// remembered are bounded in bytes (50 ids of 15 MiB once took a host to
// 1.2 GiB), and one larger than the bound is refused.
func TestSessionSelectionsAreBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, Config{Platform: linuxBox(), MaxSessionBytes: 64 << 10})
	big := strings.Repeat("x", 20<<10)
	for i := range 50 {
		if _, err := p.ProcessSetDefaultShell(ctx, call(fmt.Sprint(i, big)), &harn.SetDefaultShellRequest{ShellID: "bash"}); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	n, held := len(p.sessions), p.bytes
	p.mu.Unlock()
	if held > 64<<10 || n != 3 {
		t.Fatalf("%d sessions of %d bytes held", n, held)
	}
	if got, _ := p.ProcessGetDefaultShell(ctx, call(fmt.Sprint(49, big)), nil); got.ID != "bash" {
		t.Fatalf("the latest session forgot its shell: %s", got.ID)
	}
	_, err := p.ProcessSetDefaultShell(ctx, call(strings.Repeat("y", 15<<20)), &harn.SetDefaultShellRequest{ShellID: "bash"})
	if e, ok := errors.AsType[*rpc.Error](err); !ok || e.Code != rpc.CodeInvalidParams {
		t.Fatalf("a 15 MiB session id: %v", err)
	}
}
