package rpc

import "time"

// SetWorkerIdle sets how long idle workers wait before they retire and
// returns a function that restores the previous period.
func SetWorkerIdle(d time.Duration) (restore func()) {
	saved := workerIdle.Swap(int64(d))
	return func() { workerIdle.Store(saved) }
}
