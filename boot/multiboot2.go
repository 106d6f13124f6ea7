package boot

import "unsafe"

// Multiboot2 (GRUB's multiboot2 command; "The Multiboot2 Specification",
// version 2.0). The loader enters the same 32-bit entry as PVH, with EAX =
// Multiboot2Magic and EBX = the physical address of the boot information
// (MBI): a u32 total size, a u32 reserved, then 8-byte-aligned tags
// {u32 type, u32 size, payload}, ending with a tag of type 0.
//
// The MBI lives in memory the loader chose, which the frame allocator may
// hand out (and the kernel unmaps the low 2 MiB later), so ParseMultiboot2
// copies what the kernel reads after it returns — the memory map, the
// command line and the ACPI RSDP — into the boot package's own arrays. The
// boot module stays where the loader put it: the frame allocator keeps it
// out until it is unpacked, as with PVH.

// Multiboot2Magic is the value of EAX when a Multiboot2 loader enters.
const Multiboot2Magic = 0x36d76289

// Multiboot2 tag types the kernel reads.
const (
	mbTagEnd     = 0
	mbTagCmdline = 1
	mbTagModule  = 3
	mbTagMmap    = 6
	mbTagFB      = 8
	mbTagACPIOld = 14
	mbTagACPINew = 15
)

// Module strings (the words after the file name of GRUB's module2) that
// name a module's role. A module named CmdlineModule carries the kernel
// command line as a file (the ISO's grub.cfg passes it that way: GRUB's own
// command line is re-quoted differently by different GRUB versions); the
// boot archive is the module named InitrdModule, or else the first module
// with another name.
const (
	CmdlineModule = "yolk.cmdline"
	InitrdModule  = "yolk.initrd"
)

// Room for what ParseMultiboot2 copies. A UEFI memory map can have well
// over a hundred entries before adjacent RAM is merged.
var (
	mbMemMap  [256]MemRegion
	mbCmdline [4096]byte
	mbRSDP    [64]byte
)

// mbTag is the header of every MBI tag.
type mbTag struct{ typ, size uint32 }

// mbModule is a module tag's payload after its header: the module's
// physical range and a NUL-terminated string.
type mbModule struct{ start, end uint32 }

// mbFramebuffer is the start of the framebuffer tag's payload; for an
// EGA text screen (fbType fbEGAText) width and height count characters.
type mbFramebuffer struct {
	addr                 uint64
	pitch, width, height uint32
	bpp, fbType          uint8
}

const fbEGAText = 2

// mbMmap is the memory-map tag's payload after its header; entries of
// entrySize bytes follow, each starting like MemRegion (base, length,
// type as u64, u64, u32).
type mbMmap struct{ entrySize, entryVersion uint32 }

// ParseMultiboot2 decodes the Multiboot2 information at addr into in,
// copying the memory map (adjacent entries of one type merged), the
// command line and the RSDP, and noting an EGA text screen. It reports
// false if there is no memory map.
func ParseMultiboot2(addr uintptr, in *Info) bool {
	*in = Info{}
	total := uintptr(*at[uint32](addr))
	var cmdTag, cmdMod uintptr
	var cmdModLen uintptr
	var rsdpOld, rsdpNew uintptr
	var rsdpOldLen, rsdpNewLen uintptr
	n := 0
	for off := uintptr(8); off+8 <= total; {
		t := at[mbTag](addr + off)
		if t.typ == mbTagEnd || t.size < 8 {
			break
		}
		p := addr + off + 8
		plen := uintptr(t.size) - 8
		switch t.typ {
		case mbTagCmdline:
			cmdTag = p
		case mbTagModule:
			m := at[mbModule](p)
			start, size := uintptr(m.start), uintptr(0)
			if m.end > m.start {
				size = uintptr(m.end - m.start)
			}
			switch name := p + 8; {
			case cstrEqual(name, CmdlineModule):
				cmdMod, cmdModLen = start, size
			case cstrEqual(name, InitrdModule) || in.Module == 0:
				in.Module, in.ModuleSize = start, size
			}
		case mbTagMmap:
			mm := at[mbMmap](p)
			if mm.entrySize < 20 {
				break
			}
			for e := uintptr(8); e+uintptr(mm.entrySize) <= plen && n < len(mbMemMap); e += uintptr(mm.entrySize) {
				r := MemRegion{Addr: *at[uint64](p + e), Size: *at[uint64](p + e + 8), Type: *at[uint32](p + e + 16)}
				if n > 0 && mbMemMap[n-1].Type == r.Type && mbMemMap[n-1].Addr+mbMemMap[n-1].Size == r.Addr {
					mbMemMap[n-1].Size += r.Size
					continue
				}
				mbMemMap[n] = r
				n++
			}
		case mbTagFB:
			if fb := at[mbFramebuffer](p); fb.fbType == fbEGAText && fb.addr < 1<<32 {
				in.Text, in.TextPitch = uintptr(fb.addr), int(fb.pitch)
				in.TextCols, in.TextRows = int(fb.width), int(fb.height)
			}
		case mbTagACPIOld:
			rsdpOld, rsdpOldLen = p, plen
		case mbTagACPINew:
			rsdpNew, rsdpNewLen = p, plen
		}
		off = (off + uintptr(t.size) + 7) &^ 7
	}
	if n == 0 {
		return false
	}
	in.MemMap = addrOf((*byte)(unsafe.Pointer(&mbMemMap[0])))
	in.MemEntries = n

	// The command line: the yolk.cmdline module's bytes, else the
	// loader's command line.
	switch {
	case cmdMod != 0:
		in.Cmdline = copyCmdline(cmdMod, cmdModLen)
	case cmdTag != 0:
		in.Cmdline = copyCmdline(cmdTag, uintptr(len(mbCmdline)))
	}

	// The RSDP itself (not its address) is the tag's payload; ACPI 2.0's
	// (XSDT) is preferred.
	if rsdpNew == 0 {
		rsdpNew, rsdpNewLen = rsdpOld, rsdpOldLen
	}
	if rsdpNew != 0 {
		for i := uintptr(0); i < min(rsdpNewLen, uintptr(len(mbRSDP))); i++ {
			mbRSDP[i] = *at[byte](rsdpNew + i)
		}
		in.RSDP = addrOf(&mbRSDP[0])
	}
	return true
}

// copyCmdline copies up to n bytes from p into mbCmdline, stopping at a
// NUL, NUL-terminates it and returns its address.
func copyCmdline(p, n uintptr) uintptr {
	i := uintptr(0)
	for ; i < min(n, uintptr(len(mbCmdline)-1)); i++ {
		c := *at[byte](p + i)
		if c == 0 {
			break
		}
		mbCmdline[i] = c
	}
	mbCmdline[i] = 0
	return addrOf(&mbCmdline[0])
}

// cstrEqual reports whether the NUL-terminated string at p is s.
func cstrEqual(p uintptr, s string) bool {
	for i := 0; i < len(s); i++ {
		if *at[byte](p + uintptr(i)) != s[i] {
			return false
		}
	}
	return *at[byte](p + uintptr(len(s))) == 0
}
