// Package testcall is the kernel's halves of yolk's private calls
// (kernel/abi, answered for images that set abi.TestCalls) that need
// nothing of the kernel's own state: the kernel locks' test (LockTest),
// the per-CPU counters (CPUStats), the scheduler's trace (Trace) and the
// kernel-stack test (KStackTest). They run kernel-context code, such as
// the kernel's own locks inside the kernel, on as many CPUs as the guest
// program has threads in those calls. The dispatch (sysYolk) and the calls
// that read the kernel's state stay in kernel/sys_yolk.go.
//
// Kernel-context Go: nothing here allocates on the Go heap, stores a Go
// pointer into memory, holds an interface value or a func variable, or
// calls the runtime's scheduler; the program's memory is reached only
// through kernel/mm's copies, the kernel only through the type parameter
// (Env). kernel/kcontext_test.go checks this on a built image.
package testcall

import (
	"sync/atomic"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/sched"
	"yolk/sync/twa"
	"yolk/sync/twa/baseline"
)

// Env is what the kernel supplies. It must be a value type without
// pointers (in the kernel an empty struct).
type Env interface {
	// TimerIRQs is the count of timer interrupts CPU cpu took.
	TimerIRQs(cpu int) uint64
}

var lockTest struct {
	twa      sched.TWALock
	twaSpin  twa.Lock[twa.Spin] // the TWA lock whose waiters never halt (baseline)
	ticket   baseline.Ticket[twa.Spin]
	ttas     baseline.TTAS[twa.Spin]
	mutex    [2]sched.Mutex // CES, dispatch
	counter  uint64         // guarded by the lock under test
	owner    int32          // atomic: TID inside the critical section
	dispInit uint32
}

// maxLockTestNS bounds a counted LockTest call: its sections run with
// interrupts off, and with more vCPUs than host cores a FIFO spin lock's
// handover can take milliseconds, so 100 sections could keep a CPU from
// answering a TLB shootdown for its 5 s deadline.
const maxLockTestNS = 50e6

// LockTest runs critical sections of lock kind: n of them if n > 0 (it
// stops early after maxLockTestNS, and says how many it ran), or for -n
// microseconds if n < 0 (at most 10⁶ either way). Each reads the shared
// counter, marks its owner, spins work PAUSEs, checks it is still the
// owner, and writes the counter back incremented: without mutual
// exclusion increments get lost and owners collide.
func LockTest(kind, n int, work int, out uintptr) abi.Errno {
	// At most a million sections or a second a call: the sections run
	// with interrupts off, and -n is bounded before it is multiplied.
	if kind < 0 || kind >= abi.NumLockKinds || work < 0 || work > 1e6 || n > 1e6 || n < -1e6 ||
		!mm.UserW(out, unsafe.Sizeof(abi.LockTestOut{})) {
		return abi.EINVAL
	}
	if atomic.CompareAndSwapUint32(&lockTest.dispInit, 0, 1) {
		lockTest.mutex[1].Dispatch = true
	}
	me := sched.Current().TID
	var r abi.LockTestOut
	start := clock.Nanotime()
	end := start - int64(n)*1000
	if n > 0 {
		end = start + maxLockTestNS
	}
	for (n < 0 || r.Done < int64(n)) && clock.Nanotime() < end {
		waited := false
		switch kind {
		case abi.LockTWA:
			lockTest.twa.Lock()
		case abi.LockTicket:
			lockTest.ticket.Lock()
		case abi.LockTTAS:
			lockTest.ttas.Lock()
		case abi.LockTWASpin:
			lockTest.twaSpin.Lock()
		default:
			m := &lockTest.mutex[kind-abi.LockCES]
			if waited = m.Lock(); waited {
				r.Waited++
				r.HandoffNS += clock.Nanotime() - m.HandoffAt
				if sched.This().ID+1 == int(m.HandoffCPU) {
					r.SameCPU++
				}
			}
		}
		v := lockTest.counter
		atomic.StoreInt32(&lockTest.owner, me)
		for i := 0; i < work; i++ {
			sched.Pause()
		}
		if atomic.LoadInt32(&lockTest.owner) != me {
			r.Violations++
		}
		lockTest.counter = v + 1
		switch kind {
		case abi.LockTWA:
			lockTest.twa.Unlock()
		case abi.LockTicket:
			lockTest.ticket.Unlock()
		case abi.LockTTAS:
			lockTest.ttas.Unlock()
		case abi.LockTWASpin:
			lockTest.twaSpin.Unlock()
		default:
			lockTest.mutex[kind-abi.LockCES].Unlock()
		}
		r.Done++
	}
	r.NS = clock.Nanotime() - start
	r.Counter = atomic.LoadUint64(&lockTest.counter)
	return mm.Put(out, r)
}

// CPUStats copies up to n CPUs' counters to p (abi.CPUStats) and returns
// the number of CPUs.
func CPUStats[E Env](p uintptr, n int) (uintptr, abi.Errno) {
	var e E
	n = min(n, sched.NumCPU())
	const size = unsafe.Sizeof(abi.CPUStats{})
	if n < 0 || !mm.UserW(p, uintptr(n)*size) {
		return 0, abi.EFAULT
	}
	for i := 0; i < n; i++ {
		c := sched.CPUAt(i)
		if err := mm.Put(p+uintptr(i)*size, abi.CPUStats{Switches: c.Switches(), WakeIPIs: c.WakeIPIs(),
			TimerIRQs: e.TimerIRQs(i), Shootdowns: mm.CPUShootdowns(i), PreemptIPIs: c.PreemptIPIs(),
			LockHalts: c.LockHalts(), LockKicks: c.LockKicks()}); err != 0 {
			return 0, err
		}
	}
	return uintptr(sched.NumCPU()), 0
}

// KStackTest maps the kernel stack of the last task slot, which no
// task has unless MaxTasks are alive, with this CPU's frames running out
// after n (mm.KStackTest), and copies out what that left.
func KStackTest(n int, out uintptr) abi.Errno {
	if n < 0 || n > 64 {
		return abi.EINVAL
	}
	if !mm.UserW(out, unsafe.Sizeof(abi.KStackTestOut{})) {
		return abi.EFAULT
	}
	return mm.Put(out, mm.KStackTest(sched.MaxTasks-1, n))
}

// Trace turns the scheduler's trace on or off, or copies up to n of
// its events to p (sched/trace.go).
func Trace(op int, p uintptr, n int) (uintptr, abi.Errno) {
	switch op {
	case 0, 1:
		sched.SetTrace(op == 1)
		return 0, 0
	case 2:
	default:
		return 0, abi.EINVAL
	}
	const size = unsafe.Sizeof(sched.TraceEvent{})
	if n < 0 || n > 1<<20 || !mm.UserW(p, uintptr(n)*size) {
		return 0, abi.EFAULT
	}
	i, e := 0, abi.Errno(0)
	sched.TraceRead(func(ev *sched.TraceEvent) {
		if i < n && e == 0 {
			e = mm.Put(p+uintptr(i)*size, *ev)
			i++
		}
	})
	return uintptr(i), e
}
