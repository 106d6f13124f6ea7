package kernel

import "yolk/kernel/mm"

// Memory management is package mm; the system calls and traps here call
// into it. mmenv is what the kernel supplies to it (mm.Env): the fatal
// report, what running out of memory means (at boot, and for the program:
// trap.go) and, on amd64, the shootdown interrupt (trap_amd64.go). vm
// holds the address space's operations that need it (mapping, unmapping,
// protection, page faults, the boot's tables).

type mmenv struct{}

func (mmenv) Fatal(msg string) { fatal(msg) }
func (mmenv) OutOfMemory()     { outOfMemory() }
func (mmenv) OOMKill()         { oomKill() }

var vm mm.Space[mmenv]

// bssStart is the start of the image's BSS, textStart of its text
// (entry_$GOARCH.s).
func bssStart() uintptr
func textStart() uintptr

// imageRO is the end of the image's text and read-only data: the start of
// its first writable segment, from the ELF program headers the linker put
// in the page before the text (loaded with it; on the Raspberry Pi the
// magic number is overwritten by a branch, so it is not checked). 0 if
// they cannot be read: then nothing is made read-only.
func imageRO() uintptr {
	const (
		ptLoad   = 1
		pfW      = 2
		phdrSize = 56
	)
	hdr := textStart()&^(mm.PageSize-1) - mm.PageSize
	phoff, phentsize, phnum := *at[uint64](hdr + 0x20), *at[uint16](hdr + 0x36), *at[uint16](hdr + 0x38)
	if phentsize != phdrSize || phnum == 0 || phoff+uint64(phnum)*phdrSize > mm.PageSize {
		return 0
	}
	ro := ^uintptr(0)
	for i := uintptr(0); i < uintptr(phnum); i++ {
		ph := hdr + uintptr(phoff) + i*phdrSize
		if *at[uint32](ph) == ptLoad && *at[uint32](ph + 4)&pfW != 0 {
			ro = min(ro, uintptr(*at[uint64](ph + 16))&^(mm.PageSize-1)) // p_vaddr
		}
	}
	if ro == ^uintptr(0) || ro < textStart() {
		return 0
	}
	return ro
}
