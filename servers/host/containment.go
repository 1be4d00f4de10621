package host

import (
	"github.com/bridgekit/bridgekit/internal/supervisor"
)

// Containment says how this program keeps the runtime ServeCommand starts
// (and every command servers/host/terminal runs) from outliving it, which
// a host reports at start: README.md's "Containment" section says what a
// process with the runtime's user id can still do under each means.
type Containment struct {
	// Means is "pidns" (a PID and user namespace per child, whose init
	// dies with this program), "cgroup" (a cgroup per child, killed by
	// this program, and a subreaper supervisor), "subreaper" (a subreaper
	// supervisor, and this program killing each process group) or "none"
	// (a process group; off Linux, or in a program that is not an
	// executable).
	Means string
	// Err, when set, fails every start: BRIDGEKIT_CONTAINMENT asks for a
	// means this system does not allow, or names none.
	Err error

	text string
}

// String is one line for a start-up report: the means, what it holds, and
// why no stronger one is in force.
func (c Containment) String() string { return c.text }

// CurrentContainment reports the containment in force: the strongest
// means this system allows, or the one BRIDGEKIT_CONTAINMENT (pidns,
// cgroup, subreaper) asks for. The first call probes the system.
func CurrentContainment() Containment {
	c := supervisor.Current()
	return Containment{Means: c.Means.String(), Err: c.Err, text: c.String()}
}
