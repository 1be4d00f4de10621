package shells

import "strings"

// kind is a family of shells sharing one command-line convention.
type kind int

const (
	// kindUnknown: a shell we know nothing about. Every shell listed in
	// /etc/shells must accept "-c command" (login(1), su and sshd start it
	// that way), so that is assumed; no login or interactive mode is claimed.
	kindUnknown kind = iota
	// kindSh: the Bourne family and fish. They accept -c, -l (login) and -i
	// (interactive), in the form "-l -i -c command".
	kindSh
	// kindCsh: csh and tcsh accept -c and -i, but -l only when it is the sole
	// argument, so there is no way to run a command in a login shell.
	kindCsh
	// kindPwsh: PowerShell 7+ (pwsh), on any platform.
	kindPwsh
	// kindWinPowerShell: Windows PowerShell 5.x (powershell.exe).
	kindWinPowerShell
	// kindCmd: cmd.exe.
	kindCmd
)

// shKinds lists executable names of the sh-like family. sh and dash are in
// it on purpose: every /bin/sh in common use (dash, bash, busybox ash, ksh,
// zsh in sh mode) accepts -l, and `sh -l -c cmd` / `sh -i -c cmd` behave as
// documented by POSIX sh (-i) and the shells themselves (-l).
var shKinds = map[string]bool{
	"sh": true, "ash": true, "dash": true, "bash": true, "rbash": true,
	"zsh": true, "ksh": true, "ksh93": true, "mksh": true, "lksh": true,
	"pdksh": true, "oksh": true, "yash": true, "fish": true,
}

func classify(stem string) kind {
	s := strings.ToLower(stem)
	switch {
	case shKinds[s]:
		return kindSh
	case s == "csh" || s == "tcsh":
		return kindCsh
	case s == "pwsh" || strings.HasPrefix(s, "pwsh-"):
		return kindPwsh
	case s == "powershell":
		return kindWinPowerShell
	case s == "cmd":
		return kindCmd
	}
	return kindUnknown
}

// defaultArgs is the argument prefix placed before a command.
func (k kind) defaultArgs() []string {
	switch k {
	case kindPwsh, kindWinPowerShell:
		return []string{"-NoProfile", "-Command"}
	case kindCmd:
		return []string{"/C"}
	}
	return []string{"-c"}
}

// loginArgs is the argument prefix for a login shell; empty (not nil, so it
// encodes as []) when the family has no login mode.
func (k kind) loginArgs() []string {
	if k == kindSh {
		return []string{"-l", "-c"}
	}
	return []string{}
}

func (k kind) supportsInteractive() bool { return k == kindSh || k == kindCsh }

// label is the human name of a shell whose file name is stem and whose
// parent directory is parent.
func (k kind) label(stem, parent string) string {
	switch k {
	case kindPwsh:
		// Installers put pwsh under a directory named after the major
		// version (C:\Program Files\PowerShell\7, /opt/microsoft/powershell/7).
		if parent != "" && strings.Trim(parent, "0123456789") == "" {
			return "PowerShell " + parent
		}
		return "PowerShell"
	case kindWinPowerShell:
		return "Windows PowerShell"
	case kindCmd:
		return "Command Prompt"
	}
	return stem
}
