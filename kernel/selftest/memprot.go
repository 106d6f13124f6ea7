package main

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const pageSize = 4096

// writeFaults reports whether a write to *p faults (as a panic, with
// debug.SetPanicOnFault) and the address the fault names.
func writeFaults(p *byte) (faulted bool, addr uintptr) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			faulted = true
			if a, ok := r.(interface{ Addr() uintptr }); ok {
				addr = a.Addr()
			}
		}
	}()
	*p = 1
	return false, 0
}

// testMemoryProtection: a PROT_READ mapping reads as zeroes and faults on
// a write at the address written (runtime/debug's TestPanicOnFault); the
// kernel refuses to write into it (EFAULT), as Linux does; mprotect to
// read-write makes it writable, mprotect back to read-only (after pages
// were written) faults again and keeps the contents.
func testMemoryProtection(t *T) {
	m, err := syscall.Mmap(-1, 0, 2*pageSize, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer syscall.Munmap(m)
	if m[0] != 0 || m[pageSize+7] != 0 {
		t.Errorf("read-only mapping does not read as zeroes")
	}
	if f, a := writeFaults(&m[0x3e7]); !f || a != uintptr(unsafe.Pointer(&m[0x3e7])) {
		t.Errorf("write to a read-only page: faulted %v at %#x, want a fault at %p", f, a, &m[0x3e7])
	}
	var ts unix.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&m[0])), 0); e != syscall.EFAULT {
		t.Errorf("clock_gettime into a read-only page: %v, want EFAULT", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		t.Errorf("clock_gettime: %v", e)
	}
	if _, _, e := syscall.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&m[pageSize])), 16, 0); e != syscall.EFAULT {
		t.Errorf("getrandom into a read-only page: %v, want EFAULT", e)
	}
	if err := syscall.Mprotect(m, syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
		t.Fatalf("mprotect read-write: %v", err)
	}
	if f, _ := writeFaults(&m[0x3e7]); f {
		t.Errorf("write after mprotect(PROT_READ|PROT_WRITE) faulted")
	}
	m[pageSize] = 42
	if err := syscall.Mprotect(m, syscall.PROT_READ); err != nil {
		t.Fatalf("mprotect read-only: %v", err)
	}
	if f, _ := writeFaults(&m[pageSize+1]); !f {
		t.Errorf("write after mprotect(PROT_READ) of a written page did not fault")
	}
	if m[0x3e7] != 1 || m[pageSize] != 42 {
		t.Errorf("contents lost across mprotect: %d %d", m[0x3e7], m[pageSize])
	}
}

// testMemoryHugeLengths: lengths no user half holds are refused before any
// arithmetic, as on Linux: mmap(NULL, 1<<47) is ENOMEM (it used to return
// an area at 0xffffff0000000000 and move the mapping cursor into the
// kernel half, where every later mmap — the runtime's heap growth too —
// then landed); munmap and madvise of a range that would wrap are EINVAL,
// mprotect ENOMEM; mprotect over a hole is ENOMEM (it used to succeed).
func testMemoryHugeLengths(t *T) {
	mmap := func(n uintptr) (uintptr, syscall.Errno) {
		p, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, n, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
		return p, e
	}
	for _, n := range []uintptr{1 << 47, 1 << 63, ^uintptr(0)} {
		if p, e := mmap(n); e != syscall.ENOMEM {
			t.Errorf("mmap(NULL, %#x) = %#x, %v; want ENOMEM", n, p, e)
			if e == 0 {
				syscall.Syscall(syscall.SYS_MUNMAP, p, n, 0)
			}
		}
	}
	p, e := mmap(3 * pageSize)
	if e != 0 {
		t.Fatalf("mmap of 3 pages: %v", e)
	}
	defer syscall.Syscall(syscall.SYS_MUNMAP, p, 3*pageSize, 0)
	if p >= 1<<47 {
		t.Errorf("mmap after the huge ones = %#x: outside the user half", p)
	}
	for _, c := range []struct {
		name string
		nr   uintptr
		a2   uintptr
		want syscall.Errno
	}{
		{"munmap", syscall.SYS_MUNMAP, 0, syscall.EINVAL},
		{"madvise", syscall.SYS_MADVISE, unix.MADV_DONTNEED, syscall.EINVAL},
		{"mprotect", syscall.SYS_MPROTECT, syscall.PROT_READ, syscall.ENOMEM},
	} {
		if _, _, e := syscall.Syscall(c.nr, p, 1<<63, c.a2); e != c.want {
			t.Errorf("%s(%#x, 1<<63) = %v; want %v", c.name, p, e, c.want)
		}
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, p+pageSize, pageSize, 0); e != 0 {
		t.Fatalf("munmap of the middle page: %v", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MPROTECT, p, 3*pageSize, syscall.PROT_READ|syscall.PROT_WRITE); e != syscall.ENOMEM {
		t.Errorf("mprotect over a hole = %v; want ENOMEM", e)
	}
}

// readOnlyText is a constant whose bytes the linker puts in the image's
// read-only data.
const readOnlyText = "the image's read-only data"

// testMemoryImageRules: below the mapping areas only the image is the
// program's. Its text and read-only data are mapped read-only, as Linux
// maps them: a write there faults (reflect's TestTypeFieldReadOnly needs
// that; it used to succeed) and the kernel refuses to write there
// (EFAULT) while it still reads from there; the frame pool, MMIO and the
// hole above RAM are EFAULT for every system call (a read into the local
// APIC's page used to zero it).
func testMemoryImageRules(t *T) {
	ro := unsafe.StringData(readOnlyText)
	if faulted, _ := writeFaults(ro); !faulted {
		t.Fatalf("a write to read-only data at %p did not fault", ro)
	}
	zero, err := syscall.Open("/dev/zero", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/zero: %v", err)
	}
	defer syscall.Close(zero)
	read := func(p uintptr) syscall.Errno {
		_, _, e := syscall.Syscall(syscall.SYS_READ, uintptr(zero), p, 16)
		return e
	}
	if e := read(uintptr(unsafe.Pointer(ro))); e != syscall.EFAULT {
		t.Fatalf("read into read-only data = %v; want EFAULT", e)
	}
	if readOnlyText[0] != 't' {
		t.Fatalf("read-only data changed: %q", readOnlyText)
	}
	null, err := syscall.Open("/dev/null", syscall.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/null: %v", err)
	}
	defer syscall.Close(null)
	if _, _, e := syscall.Syscall(syscall.SYS_WRITE, uintptr(null), uintptr(unsafe.Pointer(ro)), uintptr(len(readOnlyText))); e != 0 {
		t.Errorf("write from read-only data = %v; want success", e)
	}
	// Not the program's: the frame pool (RAM past the image), MMIO, and
	// the hole above RAM, by machine.
	var outside []uintptr
	if runtime.GOARCH == "amd64" {
		outside = []uintptr{0x06000000, 0xFEC00000, 0xFEE00000, 0xC0000000} // RAM of a 128 MiB guest, I/O APIC, local APIC, hole
	} else {
		outside = []uintptr{0x46000000, 0x08000000, 0x09000000, 0x00200000} // RAM past the image, GIC, UART, device space below RAM
	}
	for _, p := range outside {
		if e := read(p); e != syscall.EFAULT {
			t.Errorf("read into %#x = %v; want EFAULT", p, e)
		}
	}
}
