//go:build !unix

package child

import "os/exec"

const groupsSupported = false

func ownGroup(*exec.Cmd) {}
func termGroup(int)      {}
func killGroup(int)      {}
