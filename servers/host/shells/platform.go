package shells

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Platform is everything discovery needs to know about the machine. The
// Provider never touches the operating system except through it, so a fake
// Platform can describe any machine (a Windows host, an empty container, a
// Mac with Homebrew shells) in a test running anywhere.
//
// Paths passed to and returned by a Platform use the conventions of GOOS():
// slash-separated on Unix, backslash-separated (with a drive letter) on
// Windows.
type Platform interface {
	// GOOS names the operating system, with runtime.GOOS values such as
	// "linux", "darwin" or "windows". It becomes each shell's platform.
	GOOS() string
	// LookupEnv reports the value of an environment variable and whether it
	// is set.
	LookupEnv(key string) (string, bool)
	// IsExecutable reports whether path (following symbolic links) is a
	// regular file this process may execute.
	IsExecutable(path string) bool
	// ReadFile returns the contents of a file; discovery reads /etc/shells.
	ReadFile(path string) ([]byte, error)
	// LoginShell returns the current user's login shell from the user
	// database, or an error when it cannot be determined.
	LoginShell() (string, error)
	// LookPath searches the executable search path for name, like
	// exec.LookPath. Discovery uses it for Windows shell names and for
	// relative paths.
	LookPath(name string) (string, error)
	// EvalSymlinks returns path with every symbolic link resolved, like
	// filepath.EvalSymlinks. Discovery uses it only to recognise two paths
	// naming the same shell; reported paths are never rewritten.
	EvalSymlinks(path string) (string, error)
}

// OS returns the Platform of the machine this process runs on.
//
// IsExecutable accepts a regular file with at least one execute permission
// bit set (on Windows: any regular file). LoginShell reads the entry for the
// current user id from /etc/passwd; it needs neither cgo nor a running name
// service, so users known only to LDAP or similar directories have no login
// shell here (on macOS, whose regular users live in Directory Services, it
// falls back to asking dscl). On Windows LoginShell always fails.
func OS() Platform { return osPlatform{} }

type osPlatform struct{}

func (osPlatform) GOOS() string { return runtime.GOOS }

func (osPlatform) LookupEnv(key string) (string, bool) { return os.LookupEnv(key) }

func (osPlatform) IsExecutable(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if runtime.GOOS == "windows" {
		return true
	}
	return fi.Mode().Perm()&0o111 != 0
}

func (osPlatform) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func (osPlatform) LookPath(name string) (string, error) { return exec.LookPath(name) }

func (osPlatform) EvalSymlinks(path string) (string, error) { return filepath.EvalSymlinks(path) }

// errNoLoginShell reports that the user database has no usable entry.
var errNoLoginShell = errors.New("no login shell in the user database")

func (osPlatform) LoginShell() (string, error) {
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		return "", fmt.Errorf("%w: not supported on %s", errNoLoginShell, runtime.GOOS)
	}
	uid := strconv.Itoa(os.Getuid())
	name := ""
	if u, err := user.Current(); err == nil {
		uid, name = u.Uid, u.Username
	}
	data, err := os.ReadFile("/etc/passwd")
	if err == nil {
		var sh string
		if sh, err = passwdShell(data, uid); err == nil {
			return sh, nil
		}
	}
	if runtime.GOOS == "darwin" && name != "" {
		if sh, derr := dsclShell(name); derr == nil {
			return sh, nil
		}
	}
	return "", err
}

// passwdShell returns the login shell recorded for uid in a passwd(5)
// document. An empty shell field means /bin/sh, as passwd(5) specifies.
func passwdShell(data []byte, uid string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 7 || f[2] != uid {
			continue
		}
		if sh := strings.TrimSpace(f[6]); sh != "" {
			return sh, nil
		}
		return "/bin/sh", nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%w: uid %s not in /etc/passwd", errNoLoginShell, uid)
}

// dsclShell asks macOS Directory Services for a user's shell.
func dsclShell(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/dscl", ".", "-read", "/Users/"+name, "UserShell").Output()
	if err != nil {
		return "", err
	}
	// Output: "UserShell: /bin/zsh"
	if _, v, ok := strings.Cut(string(out), ":"); ok {
		if v = strings.TrimSpace(v); v != "" {
			return v, nil
		}
	}
	return "", errNoLoginShell
}
