package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// An address mmap is given without MAP_FIXED is a hint (docs/user-memory.md),
// as Linux's get_unmapped_area takes it: one not page-aligned is rounded
// down to its page and used if that range is free; one in the kernel half
// or past the user half is ignored (the mapping goes elsewhere in the
// user half), never EINVAL. With MAP_FIXED or MAP_FIXED_NOREPLACE an
// address not page-aligned stays EINVAL.

func init() {
	tests = append(tests, test{"TestMmapHint", testMmapHint})
}

const userTop = 1 << 48 // above every user mapping, on both architectures

func mmapRaw(addr, n, prot, flags uintptr, fd int) (uintptr, syscall.Errno) {
	r, _, e := syscall.Syscall6(syscall.SYS_MMAP, addr, n, prot, flags, uintptr(fd), 0)
	return r, e
}

func testMmapHint(t *T) {
	const pg = pageSize
	const anon = unix.MAP_PRIVATE | unix.MAP_ANON
	fd, err := unix.Open("/tmp/mmaphint", unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	defer unix.Unlink("/tmp/mmaphint")
	if err := unix.Ftruncate(fd, pg); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	// Pages 1 and 2 of four free, 0 and 3 mapped around them.
	base, e := mmapRaw(0, 4*pg, unix.PROT_READ, anon, -1)
	if e != 0 {
		t.Fatalf("mmap: %v", e)
	}
	defer syscall.Syscall(syscall.SYS_MUNMAP, base, 4*pg, 0)
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, base+pg, 2*pg, 0); e != 0 {
		t.Fatalf("munmap: %v", e)
	}
	// free reports whether the page at a is unmapped (msync: ENOMEM).
	free := func(a uintptr) bool {
		_, _, e := syscall.Syscall(syscall.SYS_MSYNC, a, pg, unix.MS_ASYNC)
		return e == unix.ENOMEM
	}

	for _, c := range []struct {
		what  string
		hint  uintptr
		flags uintptr
		fd    int
	}{
		{"anonymous", base + pg + 123, anon, -1},
		{"a file, shared", base + 2*pg + pg - 1, unix.MAP_SHARED, fd},
		{"a file, private", base + pg + 1, unix.MAP_PRIVATE, fd},
	} {
		at := c.hint &^ (pg - 1)
		r, e := mmapRaw(c.hint, pg, unix.PROT_READ, c.flags, c.fd)
		switch {
		case e != 0:
			t.Errorf("%s: hint %#x not page-aligned: %v, want a mapping", c.what, c.hint, e)
			continue
		case r == at:
		case r&(pg-1) != 0:
			t.Errorf("%s: hint %#x: mapped at %#x, not page-aligned", c.what, c.hint, r)
		case free(at):
			// The runtime may have taken the page meanwhile; if it is
			// free, the hint was not used.
			t.Errorf("%s: hint %#x: mapped at %#x, want %#x (free)", c.what, c.hint, r, at)
		}
		syscall.Syscall(syscall.SYS_MUNMAP, r, pg, 0)

		// MAP_FIXED and MAP_FIXED_NOREPLACE take the address as it is.
		for _, fixed := range []uintptr{unix.MAP_FIXED, unix.MAP_FIXED_NOREPLACE} {
			if r, e := mmapRaw(c.hint, pg, unix.PROT_READ, c.flags|fixed, c.fd); e != unix.EINVAL {
				t.Errorf("%s: flag %#x at %#x: %#x, %v; want EINVAL", c.what, fixed, c.hint, r, e)
				if e == 0 {
					syscall.Syscall(syscall.SYS_MUNMAP, r, pg, 0)
				}
			}
		}
	}

	// Hints outside the user half are ignored: the mapping goes to a
	// page of the user half.
	for _, hint := range []uintptr{userTop, userTop + 0x1234, 0xffff800000000000, 0xffff800000001234, ^uintptr(0) - 0x800, ^uintptr(0)} {
		for _, c := range []struct {
			flags uintptr
			fd    int
		}{{anon, -1}, {unix.MAP_SHARED, fd}} {
			r, e := mmapRaw(hint, 2*pg, unix.PROT_READ, c.flags, c.fd)
			if e != 0 {
				t.Errorf("hint %#x (flags %#x): %v, want a mapping", hint, c.flags, e)
				continue
			}
			if r&(pg-1) != 0 || r < 1<<16 || r+2*pg > userTop {
				t.Errorf("hint %#x (flags %#x): mapped at %#x, outside the user half", hint, c.flags, r)
			}
			syscall.Syscall(syscall.SYS_MUNMAP, r, 2*pg, 0)
		}
	}
}
