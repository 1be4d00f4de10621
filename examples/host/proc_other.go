//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// ownGroup is a no-op where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills p.
func killGroup(p *os.Process) error { return p.Kill() }
