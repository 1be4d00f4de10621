//go:build !linux

package supervisor

import "os/exec"

// Available reports whether commands are started under a supervisor: only
// on Linux.
var Available = func() bool { return false }

// Start is cmd.Start: only Linux has the supervisor.
func Start(cmd *exec.Cmd) error { return cmd.Start() }
