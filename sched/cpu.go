package sched

import (
	"sync/atomic"
	"unsafe"

	"yolk/sched/queue"
)

// MaxCPUs bounds the number of processors: the idle mask is one word and
// every CPU has a processor slot in the ready queue's domain.
const MaxCPUs = 64

// The idle mask and queue slots must cover every CPU.
var _ = [1]struct{}{}[MaxCPUs-min(MaxCPUs, 64, queue.MaxProcs)]

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
// StackGuard for linux/amd64 and linux/arm64 alike, so nosplit chains have
// their usual room.
const guardBytes = 928

// SetStack points g at the stack [lo, hi).
func (g *G) SetStack(lo, hi uintptr) {
	g.StackLo, g.StackHi = lo, hi
	g.Guard0, g.Guard1 = lo+guardBytes, lo+guardBytes
}

// CPU is one processor's kernel state; the per-CPU base register points at
// it (GS base on amd64, TPIDR_EL1 on arm64). The first fields are used by
// the amd64 entry assembly (kernel/entry_amd64.s, cpu_amd64.s) at literal
// offsets, each line annotated "// CPU.Field";
// TestAsmOffsets checks every annotated number against unsafe.Offsetof.
type CPU struct {
	Self      uintptr // 0: address of this CPU
	UserSP    uintptr // 8: user RSP saved by the syscall entry
	KStackTop uintptr // 16: the current task's kernel stack top
	GSlot     uintptr // 24: kernel TLS: the g of the current task
	TLS       uintptr // 32: FS base in the kernel is &TLS (g at -8)
	TrapGSlot uintptr // 40: trap TLS: the g of the trap stack
	TrapTLS   uintptr // 48: FS base in trap handlers is &TrapTLS
	TrapG     G       // 56: g for the trap (IST) stack; its bounds are the current nesting level's

	ID   int
	IRQ  uint64  // the interrupt controller's name for this CPU (APIC ID; GIC target)
	cur  uintptr // *Task running here
	idle uintptr // *Task: this CPU's idle task

	// locks counts the TWA spin locks this CPU holds; a task holding one
	// must not switch (switchTo checks).
	locks int32

	switches uint64 // atomic: task switches made here
	ranSince int64  // when the current task began its slice (YieldSlice)
	// alone: YieldSlice found nothing ready at a system call of the
	// current task; a slice that ended meanwhile starts over when the
	// scheduler next looks (restart), instead of ending at once.
	alone bool
	// switchedAt is when the current task was switched to (its CPU time,
	// Task.used).
	switchedAt int64
	// spentAt (atomic) is when the current task will have used its
	// Budget (never for the idle task); preemptKicked (atomic) is set by
	// the CPU that interrupted this one for a woken task (preemptSpent)
	// and cleared when this one switches or preempts.
	spentAt       int64
	preemptKicked uint32
	preemptIPIs   uint64 // atomic: such interrupts sent from here
	wakeIPIs      uint64 // atomic: wake-up interrupts sent from here
	preempts      uint64 // atomic: involuntary switches (Preempt) made here
	spentFirst    uint64 // atomic: tasks dequeue took from qSpent first, by its bound
	why, tookQ    uint8  // why the next switch is made (trace), the queue its task came from (dequeue)
	// usedBefore is the current task's used when it was taken from
	// qSpent (0 otherwise): its budget counts from there.
	usedBefore int64
	wokenRun   bool // the current task had used less than its budget when switched to (dequeue)

	// onSince is when the current task began to run here; acct is odd
	// while a switch updates it with the tasks' CPU time (cputime.go).
	onSince int64  // atomic
	acct    uint32 // atomic

	timers timers

	// haltOn is the word (a lock's grant or a waiting-array slot) this
	// CPU halts on in a TWALock wait, 0 if none; lockHalts and lockKicks
	// count those halts and the interrupts sent to end them (lockhalt.go).
	haltOn    uintptr // atomic
	lockHalts uint64  // atomic
	lockKicks uint64  // atomic
}

var cpus [MaxCPUs]CPU

// ncpu is the number of CPUs in use (Init); online has a bit per CPU
// that has run its idle loop.
var (
	ncpu   int
	online uint64 // atomic
)

// idleMask has a bit per CPU that is about to halt or halted with nothing
// to run: the paper's "working" counter turned into a set, so that the
// task that makes another one ready knows which processor to resume.
var idleMask uint64 // atomic

// claimedMask has a bit per CPU that a waker took out of idleMask and
// interrupted for a task it made ready, until that CPU has looked at the
// ready queues again. While a bit is set a woken task has a CPU on its way
// (wokenUncovered): a CPU-bound task does not give its own CPU up for it.
var claimedMask uint64 // atomic

// InitCPU prepares CPU id (irq: its interrupt controller ID) and makes the
// calling processor's per-CPU base point at it. It is the first thing a
// CPU does, before it takes any lock.
func InitCPU(id int, irq uint64) *CPU {
	c := &cpus[id]
	c.Self = uintptr(unsafe.Pointer(c))
	c.ID = id
	c.IRQ = irq
	c.TrapGSlot = uintptr(unsafe.Pointer(&c.TrapG))
	setCPUBase(c.Self)
	return c
}

// CPUAt returns CPU i (0 <= i < MaxCPUs).
func CPUAt(i int) *CPU { return &cpus[uint(i)%MaxCPUs] }

// NumCPU is the number of CPUs the scheduler was set up for.
func NumCPU() int { return ncpu }

// Online is the set of CPUs running their idle loops, a bit per CPU.
func Online() uint64 { return atomic.LoadUint64(&online) }

// This returns the current CPU.
func This() *CPU

// kernelCPU is This, or nil if interrupts are on (assertKernel's check
// and This in one call: a spin lock's acquire makes it, and under QEMU's
// TCG each call and return costs a lookup of translated code).
func kernelCPU() *CPU

// KernelTLS is the FS base to use while in the kernel on c.
func (c *CPU) KernelTLS() uintptr { return uintptr(unsafe.Pointer(&c.TLS)) }

// TrapTLSBase is the FS base to use in trap handlers on c.
func (c *CPU) TrapTLSBase() uintptr { return uintptr(unsafe.Pointer(&c.TrapTLS)) }

// Switches is the number of task switches c has made.
func (c *CPU) Switches() uint64 { return atomic.LoadUint64(&c.switches) }

// WakeIPIs is the number of wake-up interrupts c has sent.
func (c *CPU) WakeIPIs() uint64 { return atomic.LoadUint64(&c.wakeIPIs) }

// Preempts is the number of involuntary switches made on c.
func (c *CPU) Preempts() uint64 { return atomic.LoadUint64(&c.preempts) }

// SpentFirst is the number of tasks c took from qSpent ahead of woken
// ones because the first had waited a Slice (dequeue's bound): ahead of
// the tasks on qWoken, or of the current task when it goes there.
func (c *CPU) SpentFirst() uint64 { return atomic.LoadUint64(&c.spentFirst) }

// PreemptIPIs is the number of interrupts c sent to another CPU to
// preempt its task for a woken one.
func (c *CPU) PreemptIPIs() uint64 { return atomic.LoadUint64(&c.preemptIPIs) }

// Locks is the number of spin locks c holds.
func (c *CPU) Locks() int32 { return c.locks }

// Pause is the spin-loop hint (PAUSE; YIELD on arm64).
func Pause() { pause() }
