package main

import "yolk/internal/eintrtest"

// testEINTR runs internal/eintrtest's cases: a signal sent to a thread
// blocked in futex, nanosleep, clock_nanosleep, epoll_wait, a pipe, FIFO
// or socket read, write or accept gives what Linux gives (EINTR, the call
// made again under SA_RESTART, the count done), and an ignored or blocked
// signal interrupts nothing. The hosted go test of that package runs the
// same cases on Linux.
func testEINTR(t *T) {
	for _, c := range eintrtest.Cases {
		c.Run(t)
		t.Logf("%s: done", c.Name)
	}
}
