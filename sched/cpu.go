package sched

import (
	"unsafe"

	"yolk/drivers/x86"
)

// MaxCPUs bounds the number of processors.
const MaxCPUs = 16

// G is the part of a runtime g that Go's function prologues read: the stack
// bounds and the two stack guards. The rest stays zero, so a stack overflow
// in kernel code faults on g.m (nil) in morestack instead of growing a stack
// the runtime does not own.
type G struct {
	StackLo, StackHi uintptr
	Guard0, Guard1   uintptr
	_                [12]uintptr
}

// guardBytes is how far above the stack bottom the guards sit: Go's
// StackGuard for linux/amd64, so nosplit chains have their usual room.
const guardBytes = 928

// SetStack points g at the stack [lo, hi).
func (g *G) SetStack(lo, hi uintptr) {
	g.StackLo, g.StackHi = lo, hi
	g.Guard0, g.Guard1 = lo+guardBytes, lo+guardBytes
}

// CPU is one processor's kernel state; GS base points at it. The first
// fields are used by the entry assembly (kernel/entry_amd64.s,
// cpu_amd64.s) at literal offsets, each line annotated "// CPU.Field";
// TestAsmOffsets checks every annotated number against unsafe.Offsetof.
type CPU struct {
	Self      uintptr // 0: address of this CPU
	UserSP    uintptr // 8: user RSP saved by the syscall entry
	KStackTop uintptr // 16: the current task's kernel stack top
	GSlot     uintptr // 24: kernel TLS: the g of the current task
	TLS       uintptr // 32: FS base in the kernel is &TLS (g at -8)
	TrapGSlot uintptr // 40: trap TLS: the g of the trap stack
	TrapTLS   uintptr // 48: FS base in trap handlers is &TrapTLS

	ID   int
	cur  uintptr // *Task running here
	idle uintptr // *Task: this CPU's idle task

	TrapG G // g for the trap (IST) stack
}

var cpus [MaxCPUs]CPU

// ncpu is the number of CPUs brought up.
var ncpu int

// InitCPU prepares CPU id, makes GS point at it and returns it.
func InitCPU(id int) *CPU {
	c := &cpus[id]
	c.Self = uintptr(unsafe.Pointer(c))
	c.ID = id
	c.TrapGSlot = uintptr(unsafe.Pointer(&c.TrapG))
	x86.Wrmsr(x86.MSR_GS_BASE, uint64(c.Self))
	if id+1 > ncpu {
		ncpu = id + 1
	}
	return c
}

// NumCPU is the number of CPUs brought up.
func NumCPU() int { return ncpu }

// This returns the current CPU.
func This() *CPU

// KernelTLS is the FS base to use while in the kernel on c.
func (c *CPU) KernelTLS() uintptr { return uintptr(unsafe.Pointer(&c.TLS)) }

// TrapTLSBase is the FS base to use in trap handlers on c.
func (c *CPU) TrapTLSBase() uintptr { return uintptr(unsafe.Pointer(&c.TrapTLS)) }
