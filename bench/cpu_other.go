//go:build !unix

package bench

import (
	"os"
	"time"
)

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }

// processUsage is not measured on this platform.
func processUsage() (Usage, bool) { return Usage{}, false }

// exitedUsage is not measured on this platform.
func exitedUsage(*os.ProcessState) (Usage, bool) { return Usage{}, false }
