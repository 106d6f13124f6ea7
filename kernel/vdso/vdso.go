// Package vdso lays out the vDSO's image (docs/kernel-amd64.md): a
// one-page ELF shared object exporting one function under one version,
// the clock function the Go runtime looks for. The kernel gives it the
// page, the function's offset in it and the names; it only writes bytes.
//
// It may not allocate or reach anything of the kernel (it runs at boot,
// in kernel context).
package vdso

import "encoding/binary"

const pageSize = 4096

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

// Build writes the image into page b: function fn (at offset funcOff
// from b's start), version version (its ELF hash versionHash), for ELF
// machine machine.
func Build(b []byte, machine uint16, fn, version string, versionHash uint32, funcOff uint64) {
	le := binary.LittleEndian

	copy(b[0:], "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 3) // ET_DYN
	le.PutUint16(b[18:], machine)
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
	ph(vdPhdr, 1, 5, 0, pageSize, pageSize)    // PT_LOAD, R+X
	ph(vdPhdr+56, 2, 4, vdDyn, vdSym-vdDyn, 8) // PT_DYNAMIC

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
	le.PutUint64(s[8:], funcOff)

	copy(b[vdStr+strFunc:], fn)
	strVersion := strFunc + len(fn) + 1
	copy(b[vdStr+strVersion:], version)

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
	le.PutUint32(v[8:], versionHash)
	le.PutUint32(v[12:], 20) // vd_aux
	le.PutUint32(v[20:], uint32(strVersion))
}
