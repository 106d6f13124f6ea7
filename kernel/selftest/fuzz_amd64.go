package main

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fuzzArchExcluded are amd64's own system calls the fuzzer never makes
// (fuzzExcluded has the ones every architecture has).
var fuzzArchExcluded = map[uintptr]string{
	unix.SYS_PIPE: "pipe: blocking pipes (pipe2 is fuzzed, non-blocking)", unix.SYS_PAUSE: "pause: waits for a signal",
	unix.SYS_ALARM: "alarm: SIGALRM would end the machine", unix.SYS_FORK: "fork", unix.SYS_VFORK: "vfork",
	unix.SYS_MKNOD: "mknod: a FIFO would block a later open", unix.SYS_ARCH_PRCTL: "arch_prctl: the thread's TLS",
	unix.SYS_EVENTFD: "eventfd: blocking (eventfd2 is fuzzed, non-blocking)",
}

// fuzzArchArgs bounds the arguments of amd64's own calls that could block.
func fuzzArchArgs(nr uintptr, a *[6]uintptr, zeroTS *[2]int64) {
	switch nr {
	case unix.SYS_POLL: // no waiting
		a[2] = 0
	case unix.SYS_SELECT: // a zero timeval
		a[4] = uintptr(unsafe.Pointer(zeroTS))
	case unix.SYS_EPOLL_WAIT: // no waiting
		a[3] = 0
	case unix.SYS_OPEN:
		a[1] |= syscall.O_NONBLOCK
	}
}

// fuzzArchFDCalls return a descriptor; fuzzPipe is pipe(2).
var fuzzArchFDCalls = []uintptr{unix.SYS_OPEN, unix.SYS_DUP2, unix.SYS_EPOLL_CREATE, unix.SYS_EVENTFD}

const fuzzPipe = unix.SYS_PIPE
