// Command forcesig faults (a nil dereference) on a thread that blocks
// SIGSEGV. A fault's signal is delivered whatever the mask, and Linux's
// force_sig, finding it blocked, resets the action to the default: the
// process dies of SIGSEGV (status 139) instead of entering Go's handler —
// as it would for a fault inside a handler, which runs with every signal
// blocked. TestForceSigBlocked runs it on the host and on yolk.
package main

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

var p *int

func main() {
	runtime.LockOSThread()
	var set unix.Sigset_t
	set.Val[0] = 1 << (unix.SIGSEGV - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		fmt.Println("forcesig:", err)
		os.Exit(1)
	}
	fmt.Println("forcesig: SIGSEGV blocked, faulting")
	fmt.Println(*p)
	fmt.Println("forcesig: still running")
}
