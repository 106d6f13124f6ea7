package kernel

import (
	"yolk/kernel/abi"
	"yolk/kernel/kfmt"
	"yolk/kernel/mm"
)

// The Linux-style initial stack of the first task: arguments and
// environment from the command line (cmdline.go), the auxiliary vector.

// Initial stack: an 8 MiB lazily backed mapping, like Linux's main-thread
// stack; the runtime uses its top 64 KiB as g0's stack.
const (
	stackTop  = 0x7fffffff0000
	stackSize = 8 << 20

	atNull        = 0
	atPagesz      = 6
	atClktck      = 17
	atHwcap       = 16
	atSecure      = 23
	atRandom      = 25
	atSysinfoEhdr = 33
)

func buildInitStack() uintptr {
	if _, err := vm.Map(stackTop-stackSize, stackSize, mm.ProtRead|mm.ProtWrite, true, mm.ChargeWrite); err != 0 {
		outOfMemory()
	}
	// The stack is the program's memory: written through the user copy
	// as any other (docs/user-memory.md), though nothing can unmap it
	// yet. A copy into the fresh mapping fails only for want of frames.
	sp := uintptr(stackTop)
	var bad abi.Errno
	pushStr := func(parts ...[]byte) uintptr {
		n := 1
		for _, p := range parts {
			n += len(p)
		}
		sp -= uintptr(n)
		k := sp
		for _, p := range parts {
			bad |= mm.CopyOut(k, p)
			k += uintptr(len(p))
		}
		bad |= mm.Put(k, byte(0))
		return sp
	}
	var argv [maxArgs]uintptr
	var envp [maxEnv + 2]uintptr
	for i := 0; i < nargs; i++ {
		argv[i] = pushStr(cstr(argOff[i]))
	}
	ne := 0
	for i := 0; i < nenv; i++ {
		envp[ne] = pushStr(cstr(envOff[i]))
		ne++
	}
	if !homeSet {
		envp[ne] = pushStr([]byte("HOME=/")) // as Linux gives init
		ne++
	}
	if gomemlimitOff < 0 {
		// Tell the runtime how much RAM there is, so the collector and the
		// scavenger keep the heap inside it (Linux would have swap or the
		// OOM killer; we have neither).
		var num [20]byte
		envp[ne] = pushStr([]byte("GOMEMLIMIT="), kfmt.Decimal(&num, uint64(mm.ReadStats().FramesFree)*mm.PageSize/4*3))
		ne++
	}
	sp -= 16
	rnd := sp
	bad |= mm.Put(rnd, [2]uint64{random64(), random64()})
	sp &^= 15

	auxv := [...]uintptr{
		atPagesz, mm.PageSize,
		atClktck, 100,
		atHwcap, hwcap(),
		atSecure, 0,
		atRandom, rnd,
		atSysinfoEhdr, vdsoInit(),
		atNull, 0,
	}
	words := 1 + nargs + 1 + ne + 1 + len(auxv)
	if words%2 != 0 {
		sp -= 8
	}
	sp -= uintptr(words) * 8
	w := sp
	put := func(v uintptr) {
		bad |= mm.Put(w, v)
		w += 8
	}
	put(uintptr(nargs))
	for i := 0; i < nargs; i++ {
		put(argv[i])
	}
	put(0)
	for i := 0; i < ne; i++ {
		put(envp[i])
	}
	put(0)
	for _, v := range auxv {
		put(v)
	}
	if bad != 0 {
		outOfMemory()
	}
	return sp
}
