package kernel

import (
	"encoding/binary"

	"sync/atomic"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

// rngState backs getrandom when the CPU has no RDRAND.
var rngState uint64

// weakRandWarned is set once the weak-randomness warning was printed.
var weakRandWarned uint32

func random64() uint64 {
	if v, ok := hwRandom(); ok {
		return v
	}
	// The first use is at boot (AT_RANDOM in the initial stack), so the
	// warning comes with the boot lines.
	if atomic.CompareAndSwapUint32(&weakRandWarned, 0, 1) {
		conAcquire()
		klog("warning: no working ")
		kprint(hwRandomName)
		kprint(":")
		kprint(" getrandom and AT_RANDOM fall back to a clock-seeded splitmix64; crypto/rand is NOT cryptographically secure\n")
		conRelease()
	}
	// splitmix64 over the clock-seeded state: not cryptographic.
	z := atomic.AddUint64(&rngState, 0x9e3779b97f4a7c15)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func sysGetrandom(p, n uintptr) (uintptr, abi.Errno) {
	if !userRange(p, n, true) {
		return 0, abi.EFAULT
	}
	var b [256]byte
	for done := uintptr(0); done < n; {
		c := min(n-done, uintptr(len(b)))
		for i := uintptr(0); i < c; i += 8 {
			binary.LittleEndian.PutUint64(b[i:], random64())
		}
		if mm.CopyOut(p+done, b[:c]) != 0 {
			return partial(done, abi.EFAULT)
		}
		done += c
	}
	return n, 0
}
