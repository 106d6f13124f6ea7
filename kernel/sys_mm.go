package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
)

func sysMmap(addr, n, prot, flags uintptr) (uintptr, abi.Errno) {
	if flags&unix.MAP_ANONYMOUS == 0 {
		return 0, abi.ENODEV
	}
	if n == 0 || addr&(mm.PageSize-1) != 0 {
		return 0, abi.EINVAL
	}
	if n > mm.MaxMapping {
		return 0, abi.ENOMEM
	}
	return vm.Map(addr, mm.PageRound(n), uint32(prot&7), flags&unix.MAP_FIXED != 0)
}

func sysMadvise(addr, n uintptr, advice int) abi.Errno {
	if err := mm.CheckPage(addr, n); err != 0 {
		return err
	}
	if !mm.UserSpan(addr, n) {
		return abi.EINVAL
	}
	switch advice {
	case unix.MADV_DONTNEED, unix.MADV_FREE:
		return vm.DontNeed(addr, mm.PageRound(n))
	}
	return 0 // hints (huge pages, collapse, ...) need no action
}

func sysMunmap(addr, n uintptr) abi.Errno {
	if err := mm.CheckPage(addr, n); err != 0 {
		return err
	}
	if !mm.UserSpan(addr, n) {
		return abi.EINVAL
	}
	return vm.Unmap(addr, mm.PageRound(n))
}

func sysMprotect(addr, n, prot uintptr) abi.Errno {
	if err := mm.CheckPage(addr, n); err != 0 {
		return err
	}
	if !mm.UserSpan(addr, n) {
		return abi.ENOMEM
	}
	return vm.Protect(addr, mm.PageRound(n), uint32(prot&7))
}
