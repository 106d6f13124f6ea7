package mm

import (
	"sync/atomic"

	"yolk/kernel/abi"
	"yolk/sched"
)

// KStackTest runs AllocKStack(slot) with this CPU's frames running out
// once n more have been taken (failAt), for the self-test that a stack
// is mapped whole or not at all and that a failure gives back every
// frame it took but the page tables it added, which stay for the
// slot's next try and its neighbours (abi.SysKStackTest). The slot must
// be one no task uses; the caller runs kernel code with interrupts off,
// so nothing else runs on this CPU meanwhile.
func KStackTest(slot, n int) (r abi.KStackTestOut) {
	hi := KStackBase + uintptr(slot+1)*KStackStride
	lo := hi - KStackSize
	r.WasMapped = boolInt(Readable(lo))
	table := walk(lo, false) != 0
	// The counters are set before cpu: whoever sees cpu sees them.
	failAt.left, failAt.taken, failAt.freed = int32(n), 0, 0
	atomic.StoreInt32(&failAt.cpu, int32(sched.This().ID))
	_, _, ok := AllocKStack(slot)
	atomic.StoreInt32(&failAt.cpu, -1)
	r.OK = boolInt(ok)
	r.Taken, r.Freed = int64(failAt.taken), int64(failAt.freed)
	r.TableAdded = boolInt(!table && walk(lo, false) != 0)
	for va := lo; va < hi; va += PageSize {
		r.Mapped += boolInt(Readable(va))
	}
	return r
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
