package realagent

import "fmt"

// Proc is a process found in an agent's network namespace.
type Proc struct {
	PID     int
	State   string // the state letter of /proc/PID/stat ("S", "R", "Z", ...)
	Command string // its command line, arguments joined by spaces
}

func (p Proc) String() string { return fmt.Sprintf("%d (%s) %s", p.PID, p.State, p.Command) }
