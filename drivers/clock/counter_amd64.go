package clock

import "yolk/drivers/x86"

// Counter reads the time-stamp counter.
func Counter() uint64 { return x86.Rdtsc() }
