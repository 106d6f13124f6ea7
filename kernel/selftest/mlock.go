package main

// mlock's family and the old getrlimit/setrlimit calls (x/sys/unix's
// Getrlimit makes the old one; bbolt's Mlock option makes mlock): the
// kernel never pages memory out, so locking checks its arguments as
// Linux does and succeeds.

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func init() { tests = append(tests, test{"TestMlock", testMlock}) }

func testMlock(t *T) {
	m := mmap(t, 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, 0)
	base := uintptr(m)
	sys := func(nr, a, b, c uintptr) syscall.Errno {
		_, _, e := syscall.Syscall(nr, a, b, c)
		return e
	}
	defer sys(unix.SYS_MUNMAP, base, 4*pageSize, 0)
	if e := sys(unix.SYS_MUNMAP, base+2*pageSize, pageSize, 0); e != 0 {
		t.Fatalf("munmap: %v", e)
	}
	for _, c := range []struct {
		what    string
		nr      uintptr
		a, b, c uintptr
		want    syscall.Errno
	}{
		{"mlock of a mapped range, unaligned", unix.SYS_MLOCK, base + 100, pageSize, 0, 0},
		{"munlock of it", unix.SYS_MUNLOCK, base + 100, pageSize, 0, 0},
		{"mlock of nothing", unix.SYS_MLOCK, base, 0, 0, 0},
		{"mlock over a hole", unix.SYS_MLOCK, base, 4 * pageSize, 0, unix.ENOMEM},
		{"munlock over a hole", unix.SYS_MUNLOCK, base + pageSize, 2 * pageSize, 0, unix.ENOMEM},
		{"mlock to the top", unix.SYS_MLOCK, base, ^uintptr(0) - base, 0, unix.EINVAL},
		{"mlock2 on fault", unix.SYS_MLOCK2, base, 2 * pageSize, unix.MLOCK_ONFAULT, 0},
		{"mlock2 with an unknown flag", unix.SYS_MLOCK2, base, pageSize, 2, unix.EINVAL},
		{"mlockall current and future", unix.SYS_MLOCKALL, unix.MCL_CURRENT | unix.MCL_FUTURE, 0, 0, 0},
		{"mlockall without flags", unix.SYS_MLOCKALL, 0, 0, 0, unix.EINVAL},
		{"mlockall on fault alone", unix.SYS_MLOCKALL, unix.MCL_ONFAULT, 0, 0, unix.EINVAL},
		{"munlockall", unix.SYS_MUNLOCKALL, 0, 0, 0, 0},
	} {
		if e := sys(c.nr, c.a, c.b, c.c); e != c.want {
			t.Errorf("%s: %v, want %v", c.what, e, c.want)
		}
	}

	// getrlimit (x/sys's Getrlimit) answers as prlimit64 does; a
	// resource past RLIM_NLIMITS is EINVAL, for both.
	var old, p unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &p); err != nil || p != old {
		t.Errorf("getrlimit %+v, prlimit64 %+v, %v", old, p, err)
	}
	if err := unix.Getrlimit(16, &old); err != unix.EINVAL {
		t.Errorf("getrlimit of resource 16: %v, want EINVAL", err)
	}
	if err := unix.Prlimit(0, 16, nil, &p); err != unix.EINVAL {
		t.Errorf("prlimit64 of resource 16: %v, want EINVAL", err)
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 20, Max: 64 << 20}); err != nil {
		t.Errorf("setrlimit: %v", err)
	}
}
