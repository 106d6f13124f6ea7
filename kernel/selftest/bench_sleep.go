package main

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Sleep benchmarks: one op is one sleep of d. ns/op is the mean time a
// sleep took; p50-late-ns and max-late-ns are the median and the largest
// overshoot beyond d.

func benchNanosleep(d time.Duration) func(*testing.B) {
	return func(b *testing.B) {
		benchSleep(b, d, func() {
			// Linux ends the sleep early with EINTR when the
			// runtime's preemption signal (SIGURG) arrives: sleep
			// out the rest, as a caller of nanosleep must.
			ts, rem := unix.NsecToTimespec(int64(d)), unix.Timespec{}
			for {
				err := unix.Nanosleep(&ts, &rem)
				if err == nil {
					return
				}
				if err != unix.EINTR {
					b.Fatalf("nanosleep: %v", err)
				}
				ts = rem
			}
		})
	}
}

func benchTimeSleep(d time.Duration) func(*testing.B) {
	return func(b *testing.B) { benchSleep(b, d, func() { time.Sleep(d) }) }
}

func benchSleep(b *testing.B, d time.Duration, sleep func()) {
	late := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range late {
		start := time.Now()
		sleep()
		late[i] = time.Since(start) - d
	}
	b.StopTimer()
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)/2]), "p50-late-ns")
	b.ReportMetric(float64(late[len(late)-1]), "max-late-ns")
}
