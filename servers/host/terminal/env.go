package terminal

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bridgekit/bridgekit/runtime/redact"
)

// EnvPolicy builds a command's environment from an allow-list. Nothing of
// the host's environment is inherited unless Inherit names it, and the
// agent may set only the variables Allow names. A variable that changes
// what a program runs or loads (see Steering) is passed only when Inherit
// or Allow names it exactly, never through a pattern.
//
// Entries are variable names, or a prefix followed by "*" ("LC_*").
// Names are compared case-insensitively, as Windows does.
type EnvPolicy struct {
	// Inherit names the host's variables passed on (PATH, HOME, LANG,
	// ...). Default: none.
	Inherit []string `json:"inherit,omitempty"`
	// Allow names the variables the agent's request may set. Default:
	// none, so any variable in a request is refused.
	Allow []string `json:"allow,omitempty"`
}

// Var is one variable of a request.
type Var struct{ Name, Value string }

// EnvError refuses a request's variable.
type EnvError struct {
	Name   string
	Reason string
}

func (e *EnvError) Error() string {
	return "environment variable " + strconv.Quote(e.Name) + ": " + e.Reason
}

// The variables that change what a program runs or loads: a shell's
// startup files and prompts (BASH_ENV, ENV, ZDOTDIR, PS*, a function
// exported in BASH_FUNC_*), the search path (PATH), the shell a program
// spawns (SHELL), the dynamic loader and the C library (LD_*, DYLD_*,
// GLIBC_TUNABLES, MALLOC_*, GCONV_PATH), language runtimes' options and
// module paths (NODE_*, PYTHON*, PERL*, RUBY*, JAVA*, DOTNET_*, PHP*, ...),
// the Go command's flags and configuration (GO*: GOFLAGS=-exec=...),
// git's and Mercurial's helpers and configuration (GIT_*, HG*), build
// tools' compilers, flags, wrappers and included files (CC, CFLAGS, which
// can load a compiler plugin, CGO_*, CMAKE_*, MAKE*, CONFIG_SITE, ...),
// package managers' configuration (NPM_CONFIG_*, PIP_*, CARGO_*, ...),
// plugin and module paths of libraries (OPENSSL_*, QT_*, GTK_*, GST_*,
// VK_*), tools that run a helper their configuration names (AWS_*, KUBE*,
// DOCKER_*, SSH_*, TAR_OPTIONS), network proxies, editors, pagers and
// askpass helpers, and HOME/XDG_*, which choose the configuration files
// those programs read. The list cannot be complete: a policy that allows
// a pattern trusts the programs it runs with every other name.
var (
	steeringNames = []string{
		"BASH_ENV", "ENV", "SHELL", "PATH", "IFS", "CDPATH", "PROMPT_COMMAND", "ZDOTDIR", "SHELLOPTS", "BASHOPTS", "FPATH",
		"INPUTRC", "HISTFILE", "BROWSER", "TERMINAL", "TERMINFO", "TERMINFO_DIRS", "TERMCAP",
		"HOME", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "MANOPT", "SUDO_EDITOR", "FCEDIT", "SVN_EDITOR", "CVS_RSH", "RSYNC_RSH",
		"CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "OBJCOPY", "OBJDUMP", "RANLIB", "STRIP", "FC", "F77", "YACC", "LEX", "M4",
		"CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "FFLAGS", "ARFLAGS", "MFLAGS", "CONFIG_SITE",
		"LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "COMPILER_PATH",
		"CLASSPATH", "MAVEN_OPTS", "GRADLE_OPTS", "SBT_OPTS", "RUSTC", "RUSTC_WRAPPER", "RUSTFLAGS", "RUSTDOCFLAGS",
		"GCONV_PATH", "LOCPATH", "NLSPATH", "TZDIR", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS", "GLIBC_TUNABLES",
		"KUBECONFIG", "TAR_OPTIONS", "CURL_HOME", "WGETRC", "NETRC", "SSLKEYLOGFILE", "SSL_CERT_FILE", "SSL_CERT_DIR",
		"CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
		"VIMINIT", "MYVIMRC", "EXINIT", "TMUX", "TMUX_TMPDIR", "GOOGLE_APPLICATION_CREDENTIALS",
	}
	steeringPrefixes = []string{
		"LD_", "DYLD_", "MALLOC_", "BASH_FUNC_", "PS", "LESS", "XDG_",
		"GO", "PYTHON", "PERL", "RUBY", "GEM_", "BUNDLE_", "NODE_", "NPM_CONFIG_", "YARN_", "PNPM_", "BUN_", "DENO_",
		"JAVA", "_JAVA_", "JDK_", "DOTNET_", "CORECLR_", "COMPLUS_", "PHP", "COMPOSER", "LUA_", "TCL", "TK_", "ERL_",
		"ELIXIR_", "MIX_", "JULIA_", "R_", "PIP_", "PIPENV_", "POETRY_", "UV_", "CONDA", "VIRTUAL_ENV", "CARGO_",
		"GIT_", "HG", "CGO_", "CMAKE_", "CCACHE_", "DISTCC_", "MAKE", "GNUMAKE", "GCC_", "CLANG_", "PKG_CONFIG", "NIX_",
		"OPENSSL_", "QT_", "GTK_", "GDK_", "GIO_", "GST_", "VK_", "LIBGL_", "MESA_", "__EGL_", "ELECTRON_",
		"AWS_", "AZURE_", "CLOUDSDK_", "KUBE", "HELM_", "DOCKER_", "TF_", "ANSIBLE_", "PULUMI_", "KRB5", "GNUPG", "GPG_",
		"SSH_", "SUDO_", "EMACS", "VIM", "NVIM", "ZSH", "FISH_",
	}
)

// Steering reports whether a variable changes what a program runs or
// loads, so that only a policy naming it exactly may pass it.
func Steering(name string) bool {
	n := strings.ToUpper(name)
	if slices.Contains(steeringNames, n) || strings.Contains(n, "%%") {
		return true
	}
	for _, p := range steeringPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// validName reports a usable variable name: not empty, no '=' or NUL.
func validName(n string) bool {
	return n != "" && !strings.ContainsAny(n, "=\x00")
}

// portableName reports a name of letters, digits and '_' not starting
// with a digit: what a request may set.
func portableName(n string) bool {
	for i, c := range n {
		if c != '_' && !('A' <= c && c <= 'Z') && !('a' <= c && c <= 'z') && !(i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return n != ""
}

// listed reports whether an entry of list names n: exactly, or, for a
// variable that is not Steering, by a "PREFIX*" pattern.
func listed(list []string, n string) bool {
	u := strings.ToUpper(n)
	for _, e := range list {
		e = strings.ToUpper(e)
		if e == u {
			return true
		}
		if p, ok := strings.CutSuffix(e, "*"); ok && !Steering(n) && strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// Build returns the environment of a command: the host variables of host
// (os.Environ's form) that Inherit names, then the request's, each of
// which Allow must name (a Steering one exactly). A refused variable is
// an *EnvError, and nothing is started. A variable set twice keeps its
// last value.
func (p *EnvPolicy) Build(host []string, request []Var) ([]string, error) {
	var out []string
	index := map[string]int{}
	set := func(n, v string) {
		k := strings.ToUpper(n)
		if i, ok := index[k]; ok {
			out[i] = n + "=" + v
			return
		}
		index[k] = len(out)
		out = append(out, n+"="+v)
	}
	for _, kv := range host {
		n, v, ok := strings.Cut(kv, "=")
		if ok && validName(n) && listed(p.Inherit, n) {
			set(n, v)
		}
	}
	for _, e := range request {
		switch {
		case !portableName(e.Name):
			return nil, &EnvError{Name: e.Name, Reason: "not a variable name"}
		case strings.IndexByte(e.Value, 0) >= 0:
			return nil, &EnvError{Name: e.Name, Reason: "its value holds a NUL byte"}
		case listed(p.Allow, e.Name):
			set(e.Name, e.Value)
		case Steering(e.Name):
			return nil, &EnvError{Name: e.Name, Reason: "it changes what the command runs or loads; only a policy naming it exactly allows it"}
		default:
			return nil, &EnvError{Name: e.Name, Reason: "the policy does not allow it"}
		}
	}
	return out, nil
}

// Audit renders env (NAME=VALUE entries) for a log or an audit line:
// NAME=VALUE, space-separated, values quoted where needed, the values of
// secret-looking variables masked and token shapes masked everywhere
// (runtime/redact).
func Audit(env []string) string {
	r := redact.FromEnv(env)
	parts := make([]string, 0, len(env))
	for _, kv := range env {
		n, v, _ := strings.Cut(kv, "=")
		v = r.String(v)
		if redact.EnvName(n) && v != "" {
			v = redact.Mask
		}
		if v == "" || strings.ContainsAny(v, " \t\n\"'\\") || !strconv.CanBackquote(v) {
			v = strconv.Quote(v)
		}
		parts = append(parts, fmt.Sprintf("%s=%s", n, v))
	}
	return strings.Join(parts, " ")
}
