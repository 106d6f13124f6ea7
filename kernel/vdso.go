package kernel

import (
	"encoding/binary"
	"unsafe"

	"yolk/drivers/clock"
	"yolk/kernel/mm"
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

// ELF layout inside the page.
const (
	vdEhdr    = 0
	vdPhdr    = 64
	vdDyn     = 176
	vdSym     = 320
	vdStr     = 368
	vdStrSize = 64
	vdHash    = vdStr + vdStrSize
	vdVersym  = vdHash + 24
	vdVerdef  = vdVersym + 8

	strFunc = 1 // the function's name, then the version's
)

// vdsoInit builds the image and returns its address, or 0 if disabled.
func vdsoInit() uintptr {
	if vdsoOff {
		return 0
	}
	vdsoTSCBase, vdsoMult, vdsoWall = clock.Base(), clock.Mult(), wallBase
	base := (uintptr(unsafe.Pointer(&vdsoPage[0])) + mm.PageSize - 1) &^ (mm.PageSize - 1)
	b := bytesAt(base, mm.PageSize)
	le := binary.LittleEndian

	copy(b[0:], "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 3) // ET_DYN
	le.PutUint16(b[18:], vdsoMachine)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], vdPhdr) // e_phoff
	le.PutUint16(b[52:], 64)     // e_ehsize
	le.PutUint16(b[54:], 56)     // e_phentsize
	le.PutUint16(b[56:], 2)      // e_phnum

	ph := func(off int, typ, flags uint32, o, size, align uint64) {
		le.PutUint32(b[off:], typ)
		le.PutUint32(b[off+4:], flags)
		le.PutUint64(b[off+8:], o)      // p_offset
		le.PutUint64(b[off+16:], o)     // p_vaddr
		le.PutUint64(b[off+24:], o)     // p_paddr
		le.PutUint64(b[off+32:], size)  // p_filesz
		le.PutUint64(b[off+40:], size)  // p_memsz
		le.PutUint64(b[off+48:], align) // p_align
	}
	ph(vdPhdr, 1, 5, 0, mm.PageSize, mm.PageSize) // PT_LOAD, R+X
	ph(vdPhdr+56, 2, 4, vdDyn, vdSym-vdDyn, 8)    // PT_DYNAMIC

	dyn := [...][2]uint64{
		{4, vdHash},            // DT_HASH
		{5, vdStr},             // DT_STRTAB
		{6, vdSym},             // DT_SYMTAB
		{10, vdStrSize},        // DT_STRSZ
		{11, 24},               // DT_SYMENT
		{0x6ffffff0, vdVersym}, // DT_VERSYM
		{0x6ffffffc, vdVerdef}, // DT_VERDEF
		{0x6ffffffd, 1},        // DT_VERDEFNUM
		{0, 0},                 // DT_NULL
	}
	for i, d := range dyn {
		le.PutUint64(b[vdDyn+16*i:], d[0])
		le.PutUint64(b[vdDyn+16*i+8:], d[1])
	}

	// Symbol 1: the clock function, global function, defined.
	s := b[vdSym+24:]
	le.PutUint32(s[0:], strFunc)
	s[4] = 1<<4 | 2 // STB_GLOBAL, STT_FUNC
	le.PutUint16(s[6:], 1)
	le.PutUint64(s[8:], uint64(vdsoClockGettimePC()-base))

	copy(b[vdStr+strFunc:], vdsoFunc)
	strVersion := strFunc + len(vdsoFunc) + 1
	copy(b[vdStr+strVersion:], vdsoVersion)

	// DT_HASH: one bucket holding symbol 1.
	le.PutUint32(b[vdHash:], 1)   // nbucket
	le.PutUint32(b[vdHash+4:], 2) // nchain
	le.PutUint32(b[vdHash+8:], 1) // bucket[0]

	le.PutUint16(b[vdVersym+2:], 2) // symbol 1 has version index 2

	// One version definition (index 2), and its name.
	v := b[vdVerdef:]
	le.PutUint16(v[0:], 1) // vd_version
	le.PutUint16(v[4:], 2) // vd_ndx
	le.PutUint16(v[6:], 1) // vd_cnt
	le.PutUint32(v[8:], vdsoVersionHash)
	le.PutUint32(v[12:], 20) // vd_aux
	le.PutUint32(v[20:], uint32(strVersion))
	return base
}
