// Command kernelpath instantiates twa.Lock with the kernel-context policy,
// twa.Spin, so that kernel_test.go can disassemble the code the kernel
// would run. The wrappers are nosplit and not inlined so that the inlined
// bodies of Unlock and TryLock appear as functions of their own.
package main

import "yolk/sync/twa"

var l twa.Lock[twa.Spin]

//go:nosplit
//go:noinline
func lock() { l.Lock() }

//go:nosplit
//go:noinline
func unlock() { l.Unlock() }

//go:nosplit
//go:noinline
func tryLock() bool { return l.TryLock() }

func main() {
	lock()
	unlock()
	if tryLock() {
		unlock()
	}
}
