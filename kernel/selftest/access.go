package main

// access, faccessat and faccessat2, as Linux answers uid 0 (SQLite looks
// for its temporary directory with access; exec.LookPath asks
// faccessat2 for X_OK).

import (
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { tests = append(tests, test{"TestAccess", testAccess}) }

// atFDCWD is AT_FDCWD as a system call's argument (an int, sign-extended).
var atFDCWD = uintptr(^uintptr(99)) // -100

func testAccess(t *T) {
	dir, err := os.MkdirTemp("", "access")
	if err != nil {
		t.Fatalf("mkdirtemp: %v", err)
	}
	defer os.RemoveAll(dir)
	file, exe := filepath.Join(dir, "file"), filepath.Join(dir, "exe")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := os.WriteFile(exe, []byte("x"), 0o755); err != nil {
		t.Fatalf("write: %v", err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "none"), dangling); err != nil {
		t.Fatalf("symlink: %v", err)
	}
	at := func(nr uintptr, path string, mode, flags uintptr) syscall.Errno {
		p, _ := unix.BytePtrFromString(path)
		var e syscall.Errno
		if nr == unix.SYS_FACCESSAT2 {
			_, _, e = syscall.Syscall6(nr, atFDCWD, uintptr(unsafe.Pointer(p)), mode, flags, 0, 0)
		} else {
			_, _, e = syscall.Syscall(nr, atFDCWD, uintptr(unsafe.Pointer(p)), mode)
		}
		return e
	}
	cases := []struct {
		path        string
		mode, flags uintptr
		want        syscall.Errno
	}{
		{file, unix.F_OK, 0, 0},
		{file, unix.R_OK | unix.W_OK, 0, 0},
		{file, unix.X_OK, 0, syscall.EACCES}, // no execute bit, even for root
		{exe, unix.X_OK | unix.R_OK, 0, 0},
		{dir, unix.X_OK | unix.W_OK, 0, 0},
		{filepath.Join(dir, "none"), unix.F_OK, 0, syscall.ENOENT},
		{filepath.Join(file, "child"), unix.F_OK, 0, syscall.ENOTDIR},
		{"", unix.F_OK, 0, syscall.ENOENT},
		{file, 8, 0, syscall.EINVAL},
		{dangling, unix.F_OK, 0, syscall.ENOENT},
	}
	for _, c := range cases {
		for _, nr := range []uintptr{unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2} {
			if e := at(nr, c.path, c.mode, c.flags); e != c.want {
				t.Errorf("syscall %d (%q, %#x): %v; want %v", nr, c.path, c.mode, e, c.want)
			}
		}
		if sysAccess != 0 {
			p, _ := unix.BytePtrFromString(c.path)
			if _, _, e := syscall.Syscall(sysAccess, uintptr(unsafe.Pointer(p)), c.mode, 0); e != c.want {
				t.Errorf("access(%q, %#x): %v; want %v", c.path, c.mode, e, c.want)
			}
		}
	}
	for _, c := range []struct {
		path        string
		mode, flags uintptr
		want        syscall.Errno
	}{
		{dangling, unix.F_OK, unix.AT_SYMLINK_NOFOLLOW, 0},
		{file, unix.R_OK, unix.AT_EACCESS, 0},
		{file, unix.R_OK, 0x4, syscall.EINVAL},
	} {
		if e := at(unix.SYS_FACCESSAT2, c.path, c.mode, c.flags); e != c.want {
			t.Errorf("faccessat2(%q, %#x, %#x): %v; want %v", c.path, c.mode, c.flags, e, c.want)
		}
	}
	// AT_EMPTY_PATH: the descriptor's file.
	for _, c := range []struct {
		path string
		want syscall.Errno
	}{{exe, 0}, {file, syscall.EACCES}} {
		fd, err := unix.Open(c.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		empty, _ := unix.BytePtrFromString("")
		_, _, e := syscall.Syscall6(unix.SYS_FACCESSAT2, uintptr(fd), uintptr(unsafe.Pointer(empty)), unix.X_OK, unix.AT_EMPTY_PATH, 0, 0)
		unix.Close(fd)
		if e != c.want {
			t.Errorf("faccessat2(fd of %q, \"\", X_OK, AT_EMPTY_PATH): %v; want %v", c.path, e, c.want)
		}
	}
	// What Go's own callers see.
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		t.Errorf("unix.Access(%s, W_OK|X_OK): %v", dir, err)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, exe, unix.X_OK, unix.AT_EACCESS); err != nil {
		t.Errorf("unix.Faccessat(%s, X_OK, AT_EACCESS): %v", exe, err)
	}
	// A read-only disk: W_OK is EROFS, reading is allowed.
	if ro := os.Getenv("YOLK_EXT4_RO"); ro != "" {
		if e := at(unix.SYS_FACCESSAT, ro, unix.W_OK, 0); e != syscall.EROFS {
			t.Errorf("faccessat(%s, W_OK) on the read-only disk: %v; want EROFS", ro, e)
		}
		if e := at(unix.SYS_FACCESSAT, ro, unix.R_OK|unix.X_OK, 0); e != 0 {
			t.Errorf("faccessat(%s, R_OK|X_OK) on the read-only disk: %v", ro, e)
		}
	}
}
