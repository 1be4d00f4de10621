// Package shells is a host-side provider of Harn's shell discovery
// capability: the process.list_shells, process.get_default_shell,
// process.set_default_shell and process.shell_invocation operations carried
// inside host/call (spec/schemas/host-shell-discovery.schema.json).
//
// A Provider describes the shells of the machine it runs on, truthfully:
// every shell reports whether its executable exists (available), whether it
// has a login and an interactive mode, and the arguments that run a command.
// All access to the machine goes through a Platform, so a fake Platform can
// stand for any operating system in tests; OS returns the real one.
//
// # Discovery
//
// Discovery runs once, when New is called, and again on Refresh. Shells are
// listed in this order, each tagged with its source:
//
//   - configured: Config.Shells, in order.
//   - On Unix: env ($SHELL), login (the user's login shell from the user
//     database), etc_shells (each entry of /etc/shells; comments and blank
//     lines skipped), and finally fallback (/bin/sh) when none of the
//     previous ones is available.
//   - On Windows ($SHELL, the user database and /etc/shells are not
//     consulted): pwsh, then powershell, each from the search path or else
//     its default install directory (source host); then cmd from %ComSpec%
//     (env), else the search path or %SystemRoot%\System32 (host); finally
//     fallback (%SystemRoot%\System32\cmd.exe) when none of the previous
//     ones is available.
//
// Discovered duplicates are dropped, the first source winning: two paths are
// the same shell when they start the same file under the same name
// (/bin/bash and /usr/bin/bash on a merged-/usr system). Links to a file of
// another name (/bin/sh -> dash, rbash -> bash) are distinct shells, since
// sh-like shells change behaviour with the name they are started as.
//
// Ids are the executable name (zsh, bash, pwsh, cmd; on Windows lower-cased
// without .exe). When that id is already taken by an earlier shell, the
// later one becomes name-2, name-3, ... and its label names its path.
//
// # Arguments
//
// sh, ash, dash, bash, rbash, zsh, ksh, mksh, yash, fish and their kin run
// a command with ["-c"], as a login shell with ["-l", "-c"], and
// interactively with "-i" before the "-c". Plain sh counts as such a shell:
// every common /bin/sh (dash, bash, busybox ash, ksh) accepts -l. csh and
// tcsh have no login mode for commands. pwsh and powershell use
// ["-NoProfile", "-Command"], cmd uses ["/C"]; they claim neither a login nor
// an interactive mode. Any other shell (say tmux listed in /etc/shells) is
// assumed to accept ["-c"], the contract of a login shell, and nothing more.
//
// # Defaults and errors
//
// Each session (host/call sessionId; calls without one share the session
// "") has its own default shell: the one it selected, or else the first
// available shell in discovery order, so $SHELL wins when it exists.
//
// Every error a handler returns matches one of ErrUnknownShell, ErrNoShell,
// ErrShellUnavailable or ErrInvalidInvocation with errors.Is, and unwraps to
// the *jsonrpc.Error to send, with code -32602 (invalid params) or -32000.
package shells
