package kernel

import (
	"sync/atomic"

	"yolk/sched"
)

// SMP start-up, the part both architectures share: the boot CPU gives each
// other CPU an idle task with a kernel stack and its per-CPU state, starts
// them all at once, and waits until each runs Go code; they wait in a
// barrier until the boot CPU has finished the steps that change the page
// tables for everyone (bootDone), then enter their idle loops. How CPUs
// are found, started and named is the arch's (smp_$GOARCH.go).

var smpGo uint32 // atomic: the other CPUs may leave the boot barrier

// smpStart starts CPUs 1..n-1 and waits until each runs Go code.
func smpStart(n int) {
	if n < 2 {
		return
	}
	smpPrepare(n)
	for i := 1; i < n; i++ {
		t := sched.Alloc()
		if t == nil {
			fatal("smp: no task slot for an idle task")
		}
		hi := kernelStack(t)
		if hi == 0 {
			outOfMemory()
		}
		prepareIdle(i, t, hi)
		prepareCPU(i)
	}
	for i := 1; i < n; i++ {
		percpu[i].sent = nanotime()
		startCPU(i)
	}
	for i := 1; i < n; i++ {
		for deadline := nanotime() + 2e9; atomic.LoadInt64(&percpu[i].up) == 0; {
			if nanotime() > deadline {
				klog("smp: CPU ")
				kprintDec(int64(i))
				kprint(" (")
				kprint(cpuIDName)
				kprint(" ")
				printCPUID(i)
				kprint(") did not start within 2 s\n")
				fatal("smp: a CPU did not start")
			}
			sched.Pause()
		}
	}
}

// smpRelease lets the other CPUs leave the boot barrier.
func smpRelease(n int) {
	atomic.StoreUint32(&smpGo, 1)
	for i := 1; i < n; i++ {
		sendIPI(i, vecWake)
	}
}

// tooManyCPUs stops the boot of a machine with more than sched.MaxCPUs.
func tooManyCPUs(n int) {
	klog("smp: the machine has ")
	kprintDec(int64(n))
	kprint(" CPUs; this kernel supports at most ")
	kprintDec(sched.MaxCPUs)
	kprint(" (sched.MaxCPUs)\n")
	fatal("smp: more CPUs than the kernel supports")
}

// smpReport prints the CPUs and their start-up times (the arch names
// them: printCPUID, cpuIDName, cpuStartName).
func smpReport(n int) {
	if n < 2 {
		return
	}
	var slowest, last int64
	for i := 1; i < n; i++ {
		p := &percpu[i]
		slowest = max(slowest, p.up-p.sent)
		last = max(last, p.up)
	}
	klog("smp: ")
	kprintDec(int64(n))
	kprint(" CPUs (")
	kprint(cpuIDName)
	kprint("s")
	for i := 0; i < n; i++ {
		kprint(" ")
		printCPUID(i)
	}
	kprint("); the slowest ran Go code ")
	kprintDec(slowest / 1e3)
	kprint(" µs after its ")
	kprint(cpuStartName())
	kprint(", all ")
	kprintDec((last - percpu[1].sent) / 1e3)
	kprint(" µs after the first\n")
}
