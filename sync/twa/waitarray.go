package twa

import (
	"sync/atomic"
	"unsafe"
)

const (
	// waitSlots is the size of the waiting array, the paper's 4096. It must
	// be a power of two: the hash masks with waitSlots-1.
	waitSlots = 4096

	// sector is the unit of false sharing the layout guards against: two
	// 64-byte lines, because the adjacent-line prefetcher of x86 cores moves
	// lines in pairs. arm64 cores use 64-byte lines; 128 covers both.
	sector = 128

	// hashMul is the paper's small prime: consecutive tickets of one lock
	// land 127 slots (1016 bytes) apart, in different sectors, so that the
	// long-term waiters of one queue do not poll the same line.
	hashMul = 127
)

// waitArray is the one waiting array shared by every Lock in the address
// space, 4096 × 8 bytes = 32 KiB. Slots are not padded individually (that
// would cost 512 KiB); the hash spreads a queue's tickets across sectors
// instead, as in the paper. The array is padded by a sector on each side so
// that no other variable shares a sector with its first or last slots.
//
// A slot's value means nothing by itself: it is an event count. Unlock
// increments the slot of the ticket it promotes; a long-term waiter wakes
// when its slot changes and rechecks the lock's grant. Collisions between
// locks or tickets only cause such rechecks. Slots are 64 bits, as in the
// paper, so that a waiter's snapshot cannot come round again (ABA) while it
// is descheduled; the array starts 128 bytes into a global variable, so its
// slots are 8-byte aligned for 64-bit atomics on every architecture.
var waitArray struct {
	_    [sector]byte
	slot [waitSlots]uint64 // accessed atomically
	_    [sector]byte
}

// waitSlot returns the waiting-array slot of (lock, ticket): the paper's
// hash, (ticket × 127) XOR address, masked to the array size. A given pair
// always maps to the same slot. Mixing in the address keeps two locks whose
// tickets advance in step from colliding on every ticket; locks whose
// addresses differ only above bit 11 still do (the tests use such locks).
//
//go:nosplit
func waitSlot(lock unsafe.Pointer, ticket uint32) *uint64 {
	return &waitArray.slot[(uintptr(ticket)*hashMul^uintptr(lock))&(waitSlots-1)]
}

// Prefault reads one slot in every page of the waiting array, and
// loadGapHook, so that a kernel that backs untouched memory lazily (yolk
// gives untouched BSS pages back at boot) backs them now and neither an
// Unlock nor a long-term waiter ever takes a page fault. A waiter's fault
// would be worse than slow: the kernel's frame allocator takes a TWA lock,
// so a fault backing the page queues again behind a later ticket, waits
// long-term again, and faults again, until the trap stack runs out (a
// double fault on a 4-CPU boot, where the hook shared the first lazy BSS
// page only with the program's variables). It is kernel-context code like
// the Spin lock path.
//
// Not inlined: kernel/bssfault_test.go finds what it keeps in its body.
//
//go:nosplit
//go:noinline
func Prefault() {
	for i := 0; i < waitSlots; i += 4096 / 8 {
		atomic.LoadUint64(&waitArray.slot[i])
	}
	atomic.LoadUint64(&waitArray.slot[waitSlots-1])
	atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&loadGapHook)))
}
