package kernel

import "yolk/kernel/mm"

// Memory management is package mm; the system calls and traps here call
// into it. mmenv is what the kernel supplies to it (mm.Env): the fatal
// report, what running out of memory means and, on amd64, the shootdown
// interrupt (trap_amd64.go). vm holds the address space's operations
// that need it (mapping, unmapping, protection, page faults, the boot's
// tables).

type mmenv struct{}

func (mmenv) Fatal(msg string) { fatal(msg) }
func (mmenv) OutOfMemory()     { outOfMemory() }

var vm mm.Space[mmenv]

// bssStart is the start of the image's BSS (entry_$GOARCH.s).
func bssStart() uintptr
