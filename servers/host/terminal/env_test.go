package terminal

import (
	"errors"
	"strings"
	"testing"
)

func TestEnvPolicy(t *testing.T) {
	host := []string{"PATH=/usr/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-secret", "LC_ALL=C", "LC_CTYPE=C", "GOFLAGS=-x"}
	p := &EnvPolicy{Inherit: []string{"PATH", "LC_*", "GO*"}, Allow: []string{"GREETING", "APP_*", "BASH_ENV_OK"}}
	got, err := p.Build(host, []Var{{"GREETING", "hi"}, {"APP_MODE", "x"}, {"GREETING", "again"}})
	if err != nil {
		t.Fatal(err)
	}
	// GOFLAGS is Steering: a pattern does not inherit it.
	if want := "PATH=/usr/bin LC_ALL=C LC_CTYPE=C GREETING=again APP_MODE=x"; strings.Join(got, " ") != want {
		t.Errorf("Build = %q, want %q", got, want)
	}
	for _, v := range []Var{
		{"GOFLAGS", "-exec=bash"}, {"BASH_ENV", "/tmp/x"}, {"SHELL", "/tmp/evil"}, {"ENV", "/tmp/x"},
		{"LD_PRELOAD", "/tmp/x.so"}, {"DYLD_INSERT_LIBRARIES", "x"}, {"PYTHONSTARTUP", "x"}, {"NODE_OPTIONS", "--require x"},
		{"PERL5OPT", "-Mx"}, {"RUBYOPT", "-rx"}, {"GIT_SSH_COMMAND", "x"}, {"PATH", "/tmp"}, {"GOENV", "/tmp/x"},
		{"APP_*", "x"}, {"BASH_FUNC_ls%%", "() { id; }"}, {"goflags", "-exec=bash"},
		{"UNLISTED", "x"}, {"", "x"}, {"A=B", "x"}, {"GREETING", "a\x00b"},
	} {
		if _, err := p.Build(host, []Var{v}); err == nil {
			t.Errorf("%s=%s allowed", v.Name, v.Value)
		} else if e, ok := errors.AsType[*EnvError](err); !ok || e.Name != v.Name {
			t.Errorf("%s: %v", v.Name, err)
		}
	}
	// A policy naming a Steering variable exactly allows it.
	exact := &EnvPolicy{Allow: []string{"GOFLAGS"}}
	if got, err := exact.Build(nil, []Var{{"GOFLAGS", "-count=1"}}); err != nil || len(got) != 1 {
		t.Errorf("exactly named: %v %v", got, err)
	}
	if got, _ := (&EnvPolicy{}).Build(host, nil); len(got) != 0 {
		t.Errorf("the zero policy inherited %q", got)
	}
}

func TestAudit(t *testing.T) {
	got := Audit([]string{"PATH=/usr/bin", "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "NOTE=has space", "TOKENISH=ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
	if strings.Contains(got, "sk-proj") || strings.Contains(got, "ghp_") || !strings.Contains(got, "PATH=/usr/bin") || !strings.Contains(got, `NOTE="has space"`) {
		t.Errorf("Audit = %s", got)
	}
}

// FuzzEnvPolicy: no request variable that is Steering passes a policy
// that allows only patterns, and Build never returns a malformed entry.
func FuzzEnvPolicy(f *testing.F) {
	for _, s := range []string{"GOFLAGS", "BASH_ENV", "LD_PRELOAD", "ld_preload", "APP_X", "PATH", "A=B", "", "BASH_FUNC_x%%", "PYTHONPATH", "GIT_DIR"} {
		f.Add(s, "v")
	}
	p := &EnvPolicy{Inherit: []string{"*"}, Allow: []string{"*", "APP_*"}}
	host := []string{"PATH=/bin", "LD_PRELOAD=x", "HOME=/h", "X=1"}
	f.Fuzz(func(t *testing.T, name, value string) {
		env, err := p.Build(host, []Var{{name, value}})
		if err != nil {
			return
		}
		for _, kv := range env {
			n, _, ok := strings.Cut(kv, "=")
			if !ok || n == "" || strings.ContainsRune(kv, 0) {
				t.Fatalf("malformed %q", kv)
			}
			if Steering(n) {
				t.Fatalf("%s passed a pattern", n)
			}
		}
	})
}

// FuzzFitJSON: the cut text is a tail of the input and fits the budget.
func FuzzFitJSON(f *testing.F) {
	f.Add("hello\x00€\"", 10)
	f.Fuzz(func(t *testing.T, s string, budget int) {
		if budget < 0 || budget > 1<<16 {
			return
		}
		got, cut := fitJSON(s, budget)
		if !strings.HasSuffix(s, got) || cut != (got != s) {
			t.Fatalf("fitJSON(%q, %d) = %q, %v", s, budget, got, cut)
		}
		size := 2
		for _, r := range got {
			size += jsonLen(r, len(string(r)))
		}
		if got != "" && size > budget {
			t.Fatalf("size %d over %d", size, budget)
		}
	})
}

// TestPatternsPassNoCodeLoader: a policy of patterns alone ("*", or one
// that a loader's name happens to start with) passes none of the
// variables known to make a program run or load other code: make's
// included makefiles, OpenSSL's engines, autoconf's site file, kubectl's
// and the AWS CLI's credential helpers, .NET's startup hooks, PHP's ini,
// glibc's tunables, a compiler plugin through CFLAGS, tar's
// --to-command, a Qt or GTK plugin path.
func TestPatternsPassNoCodeLoader(t *testing.T) {
	loaders := []string{
		"MAKEFILES", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES", "CONFIG_SITE", "KUBECONFIG", "HGRCPATH",
		"DOTNET_STARTUP_HOOKS", "CORECLR_PROFILER_PATH", "COMPlus_x", "PHPRC", "PHP_INI_SCAN_DIR", "GLIBC_TUNABLES",
		"AWS_CONFIG_FILE", "CFLAGS", "TAR_OPTIONS", "QT_PLUGIN_PATH", "GTK_MODULES", "GST_PLUGIN_PATH", "VK_LAYER_PATH",
		"PS1", "LESSOPEN", "XDG_CONFIG_DIRS", "PIP_CONFIG_FILE", "CMAKE_C_COMPILER_LAUNCHER", "SSH_ASKPASS_REQUIRE",
		"https_proxy", "NODE_EXTRA_CA_CERTS", "JAVA_HOME", "DOCKER_HOST",
	}
	for _, allow := range [][]string{{"*"}, {"MAKE*", "OPENSSL*", "C*", "K*", "H*", "D*", "P*", "G*", "A*", "T*", "Q*", "V*", "L*", "X*", "S*", "N*", "J*"}} {
		p := &EnvPolicy{Inherit: allow, Allow: allow}
		for _, n := range loaders {
			if _, err := p.Build(nil, []Var{{n, "x"}}); err == nil {
				t.Errorf("Allow %q passed %s", allow, n)
			}
			if got, _ := p.Build([]string{n + "=x"}, nil); len(got) != 0 {
				t.Errorf("Inherit %q passed %q", allow, got)
			}
		}
	}
	// Ordinary names still pass a pattern.
	p := &EnvPolicy{Allow: []string{"*"}}
	if got, err := p.Build(nil, []Var{{"CI", "1"}, {"NO_COLOR", "1"}, {"APP_MODE", "x"}, {"LC_ALL", "C"}}); err != nil || len(got) != 4 {
		t.Errorf("ordinary names: %q %v", got, err)
	}
}
