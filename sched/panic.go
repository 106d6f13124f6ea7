package sched

// die stops the machine with a fault report when a scheduler invariant is
// broken. A store to address 0 page-faults into the kernel's fault reporter
// (in kernel context, so no signal is delivered), which prints the registers
// and this backtrace; sched cannot call the kernel directly.
func die() {
	var p *uintptr
	*p = 0xdead
}
