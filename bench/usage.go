package bench

import "time"

// Usage is the CPU time and context switches a process used, as getrusage
// reports them.
type Usage struct {
	User, System time.Duration
	// Voluntary context switches happen when a thread blocks (waiting
	// for a pipe, a futex, the scheduler's netpoller); involuntary ones
	// when the kernel preempts it.
	Voluntary, Involuntary int64
}

// Sub returns u minus an earlier reading.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{
		User:        u.User - earlier.User,
		System:      u.System - earlier.System,
		Voluntary:   u.Voluntary - earlier.Voluntary,
		Involuntary: u.Involuntary - earlier.Involuntary,
	}
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		User:        u.User + v.User,
		System:      u.System + v.System,
		Voluntary:   u.Voluntary + v.Voluntary,
		Involuntary: u.Involuntary + v.Involuntary,
	}
}

// perMessage adds u, divided by n, to m: user_us_msg, sys_us_msg,
// vcsw_msg, ivcsw_msg and csw_msg (voluntary and involuntary), each name
// with prefix in front.
func (u Usage) perMessage(m Metrics, prefix string, n int64) {
	if n <= 0 {
		return
	}
	k := float64(n)
	m[prefix+"user_us_msg"] = us(u.User) / k
	m[prefix+"sys_us_msg"] = us(u.System) / k
	m[prefix+"vcsw_msg"] = float64(u.Voluntary) / k
	m[prefix+"ivcsw_msg"] = float64(u.Involuntary) / k
	m[prefix+"csw_msg"] = float64(u.Voluntary+u.Involuntary) / k
}
