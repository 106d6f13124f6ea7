package kernel

import (
	"yolk/kernel/abi"
	"yolk/sched"
)

// arm64 has only the generic system-call table: no legacy calls.
func sysLegacy(t *sched.Task, nr, a0, a1, a2, a3 uintptr) (ret uintptr, err abi.Errno, ok bool) {
	return 0, 0, false
}

// cloneTLS is clone's TLS argument: the fourth on arm64
// (flags, stack, parent_tid, tls, child_tid).
func cloneTLS(a3, a4 uintptr) uintptr { return a3 }

// tlsOK reports whether addr may be a thread's TLS register (clone's
// CLONE_SETTLS): any value, as Linux's arm64 copy_thread takes it into
// TPIDR_EL0 unchecked.
func tlsOK(addr uintptr) bool { return true }

// unameMachine is uname's machine field.
const unameMachine = "aarch64"

// struct epoll_event is 16 bytes on arm64: events, padding, data at 8.
const (
	epollEventSize = 16
	epollDataOff   = 8
)
