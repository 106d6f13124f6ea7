package kernel

import (
	"unsafe"

	"yolk/kernel/mm"
	"yolk/sched"
)

// bootDone ends the boot once the n CPUs are up: the per-CPU blocks are
// kept out of the demand-paged BSS (the fault path uses them), the BSS
// nobody touched goes back to the frame allocator, the other CPUs leave
// their barrier, and the boot report is printed.
func bootDone(n int) {
	for i := 0; i < n; i++ {
		mm.BSSKeep(uintptr(unsafe.Pointer(sched.CPUAt(i))), unsafe.Sizeof(sched.CPU{}))
		mm.BSSKeep(uintptr(unsafe.Pointer(&percpu[i])), unsafe.Sizeof(percpu[i]))
	}
	if va := mm.BSSReclaim(); va != 0 {
		klog("bss: no page-table entry for ")
		kprintHex(uint64(va), 1)
		kprint("\n")
	}
	smpRelease(n)

	ms := mm.ReadStats()
	klog("boot: ")
	kprintDec(ms.FramesAll * mm.PageSize >> 20)
	kprint(" MiB RAM free (")
	kprintDec(ms.BSSReclaimed * mm.PageSize >> 20)
	kprint(" MiB of it untouched BSS, now demand-paged), ")
	printClock()
	kprint(", ")
	kprintDec(int64(n))
	kprint(" CPU")
	if n > 1 {
		kprint("s")
	}
	kprint(", boot ")
	kprintDec(nanotime() / 1e3)
	kprint(" µs\n")
	smpReport(n)
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

// startInit creates the first user task: the Go runtime's entry point on a
// Linux-style initial stack.
func startInit() {
	t := sched.Alloc()
	lo, hi, ok := mm.AllocKStack(t.Index())
	if !ok {
		outOfMemory()
	}
	t.SetStack(lo, hi)
	sp := buildInitStack()
	fr := at[Regs](hi - regsSize)
	*fr = userStart(rt0PC(), sp)
	t.Prepare(hi-regsSize, forkretPC())
	sched.Ready(t)
}
