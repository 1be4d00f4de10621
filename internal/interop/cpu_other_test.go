//go:build !unix

package interop

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }

func procCPU(int) time.Duration { return 0 }
