// Command forcesig ends with a fault whose signal is blocked, which
// Linux's force_sig turns into death by SIGSEGV (status 139): a fault's
// signal is delivered whatever the mask, and when it is blocked the action
// is reset to the default. Two ways there, as TestForceSigBlocked runs
// them on the host and on yolk:
//
//	forcesig            a nil dereference on a thread that blocks SIGSEGV
//	forcesig sigreturn  rt_sigreturn with SP 0x10: the bad frame's SIGSEGV
//	                    enters Go's handler, which, unable to use that
//	                    stack, faults inside itself with every signal
//	                    blocked (yolk used to enter the handler again)
package main

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

var p *int

// badSigreturn calls rt_sigreturn with SP 0x10.
func badSigreturn()

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sigreturn" {
		fmt.Println("forcesig: rt_sigreturn with SP 0x10")
		badSigreturn()
		fmt.Println("forcesig: still running")
		return
	}
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
