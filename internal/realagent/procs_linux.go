//go:build linux

package realagent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procsIn lists the live (not zombie) processes whose network namespace
// has inode ino. A process cannot leave a network namespace without
// privilege, so this finds every descendant of the agent, whatever
// process group or session it moved to.
func procsIn(ino uint64) []Proc {
	want := fmt.Sprintf("net:[%d]", ino)
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil || link != want {
			continue
		}
		p := Proc{PID: pid, State: "?"}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) {
				p.State = string(stat[i+2])
			}
		}
		if p.State == "Z" || p.State == "X" {
			continue
		}
		if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			p.Command = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		}
		out = append(out, p)
	}
	return out
}

// killAll sends SIGKILL to every process in the namespace.
func killAll(ino uint64) {
	for _, p := range procsIn(ino) {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
}

// procsInGroup lists the live processes of process group pgid.
func procsInGroup(pgid int) []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:])) // state ppid pgrp ...
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		out = append(out, Proc{PID: pid, State: f[0]})
	}
	return out
}
