package kernel

import (
	"sync/atomic"

	"yolk/drivers/clock"
	"yolk/kernel/kfmt"
	"yolk/sched"
)

var (
	conLock sched.TWALock
	// conOwner is 1 + the CPU holding conLock, 0 if none.
	conOwner int32
	// conCol is the column of the last byte written (0 after a newline), so
	// kernel messages can start on a fresh line.
	conCol int
)

// conAcquire and conRelease bracket console output.
func conAcquire() {
	conLock.Lock()
	atomic.StoreInt32(&conOwner, int32(sched.This().ID+1))
}

func conRelease() {
	atomic.StoreInt32(&conOwner, 0)
	conLock.Unlock()
}

// conGrab takes the console for good, to print a fault report or the exit
// line. The lock may be held by this CPU (a fault while printing) or by a
// CPU that the fault has just stopped, so it waits at most 100 ms (not at
// all before the clock is calibrated, when only this CPU runs) and then
// takes the console regardless: a report must never deadlock.
func conGrab() {
	me := int32(sched.This().ID + 1)
	if atomic.LoadInt32(&conOwner) == me {
		return
	}
	for end := nanotime() + 100e6; !conLock.TryLock(); {
		if clock.Hz() == 0 || nanotime() > end {
			break
		}
	}
	atomic.StoreInt32(&conOwner, me)
}

func putc(c byte) {
	if c == '\n' {
		conCol = 0
	} else {
		conCol++
	}
	conPut(c)
}

// consoleWrite writes user bytes (the write system call on fd 1 and 2).
func consoleWrite(p []byte) {
	conAcquire()
	for _, c := range p {
		putc(c)
	}
	conRelease()
}

// kprint and friends write kernel messages without allocating.
func kprint(s string) {
	for i := 0; i < len(s); i++ {
		putc(s[i])
	}
}

// kprintBytes is kprint for a byte slice.
func kprintBytes(b []byte) {
	for _, c := range b {
		putc(c)
	}
}

// knewline starts a fresh line unless the cursor is at one.
func knewline() {
	if conCol != 0 {
		putc('\n')
	}
}

// kprintHex prints v as 0x and at least digits hex digits; kprintDec in
// decimal (kernel/kfmt formats both).
func kprintHex(v uint64, digits int) {
	var buf [18]byte
	kprintBytes(kfmt.Hex(&buf, v, digits))
}

func kprintDec(v int64) {
	var buf [21]byte
	kprintBytes(kfmt.Dec(&buf, v))
}

// klogErrno prints "yolk: " + what + path and errno e on a line.
func klogErrno(what string, path []byte, e int64) {
	klog(what)
	kprintBytes(path)
	kprint(": errno ")
	kprintDec(e)
	kprint("\n")
}

// klog prints "yolk: " + s on a fresh line; callers add values and "\n".
func klog(s string) {
	knewline()
	kprint("yolk: ")
	kprint(s)
}
