package clock

import "yolk/arch/amd64"

// Counter reads the time-stamp counter.
func Counter() uint64 { return amd64.Rdtsc() }
