package kernel

import (
	"unsafe"

	"yolk/drivers/clock"
	"yolk/kernel/mm"
	"yolk/kernel/vdso"
)

// The vDSO: a one-page ELF shared object the kernel builds at boot and
// names in the auxiliary vector (AT_SYSINFO_EHDR), exporting the clock
// function the Go runtime looks for — amd64: __vdso_clock_gettime,
// version LINUX_2.6; arm64: __kernel_clock_gettime, LINUX_2.6.39
// (vdso_$GOARCH.go) — so that time.Now reads the CPU's counter (TSC,
// CNTVCT_EL0) without entering the kernel. The function is
// vdsoClockGettime (vdso_$GOARCH.s), in the kernel's text: its symbol
// value is simply its offset from the page. It reads vdsoTSCBase, vdsoMult
// and vdsoWall, which the kernel sets at boot and never changes.

var (
	vdsoPage    [2 * mm.PageSize]byte
	vdsoTSCBase uint64
	vdsoMult    uint64
	vdsoWall    int64
	vdsoOff     bool // yolk.vdso=0: no vDSO, time goes through system calls
)

func vdsoClockGettime()
func vdsoClockGettimePC() uintptr

// vdsoInit builds the image (package vdso lays it out) and returns its
// address, or 0 if disabled.
func vdsoInit() uintptr {
	if vdsoOff {
		return 0
	}
	vdsoTSCBase, vdsoMult, vdsoWall = clock.Base(), clock.Mult(), wallBase
	first := uintptr(unsafe.Pointer(&vdsoPage[0]))
	base := (first + mm.PageSize - 1) &^ (mm.PageSize - 1)
	vdso.Build(vdsoPage[base-first:][:mm.PageSize], vdsoMachine, vdsoFunc, vdsoVersion, vdsoVersionHash, uint64(vdsoClockGettimePC()-base))
	return base
}
