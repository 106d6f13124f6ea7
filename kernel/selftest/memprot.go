package main

import (
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
