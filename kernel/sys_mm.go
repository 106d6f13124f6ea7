package kernel

import (
	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

func sysMmap(addr, n, prot, flags uintptr) (uintptr, abi.Errno) {
	if flags&unix.MAP_ANONYMOUS == 0 {
		return 0, abi.ENODEV
	}
	if n == 0 || addr&(pageSize-1) != 0 {
		return 0, abi.EINVAL
	}
	return vmMap(addr, pageRound(n), uint32(prot&7), flags&unix.MAP_FIXED != 0)
}

func sysMadvise(addr, n uintptr, advice int) abi.Errno {
	if err := checkPage(addr, n); err != 0 {
		return err
	}
	switch advice {
	case unix.MADV_DONTNEED, unix.MADV_FREE:
		return vmDontNeed(addr, pageRound(n))
	}
	return 0 // hints (huge pages, collapse, ...) need no action
}

func sysMunmap(addr, n uintptr) abi.Errno {
	if err := checkPage(addr, n); err != 0 {
		return err
	}
	return vmUnmap(addr, pageRound(n))
}

func sysMprotect(addr, n, prot uintptr) abi.Errno {
	if err := checkPage(addr, n); err != 0 {
		return err
	}
	return vmProtect(addr, pageRound(n), uint32(prot&7))
}
