package main

// mmap's argument checks in Linux's order, and Linux's heuristic
// overcommit (docs/user-memory.md).

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func rawMmap(addr, n uintptr, prot, flags int, fd int, off uintptr) (uintptr, syscall.Errno) {
	p, _, e := syscall.Syscall6(syscall.SYS_MMAP, addr, n, uintptr(prot), uintptr(flags), uintptr(fd), off)
	return p, e
}

// testMmapErrnoOrder: argument combinations with two errors at once get
// the one Linux checks first — sys_mmap's offset alignment, the
// descriptor, do_mmap's length (0: EINVAL; rounding past the top:
// ENOMEM), get_unmapped_area's length and MAP_FIXED range (ENOMEM)
// before the MAP_FIXED address's alignment (EINVAL), then
// MAP_FIXED_NOREPLACE's EEXIST, then a file's offset past what it holds
// (EOVERFLOW) and the mapping type. yolk used to check the MAP_FIXED
// address first, and an anonymous mapping's offset and type not at all.
func testMmapErrnoOrder(t *T) {
	m := mmap(t, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, 0)
	defer syscall.Syscall(syscall.SYS_MUNMAP, m, 2*pageSize, 0)
	f, err := os.CreateTemp("", "mmaperrno")
	if err != nil {
		t.Fatalf("CreateTemp: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(pageSize); err != nil {
		t.Fatalf("truncate: %v", err)
	}
	fd := int(f.Fd())
	const (
		anon    = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
		big     = uintptr(0x7ffffffffffff000) // an offset no file holds with a page after it
		kernel  = uintptr(0xffff800000000000) // the kernel half
		rw      = unix.PROT_READ | unix.PROT_WRITE
		fixed   = unix.MAP_FIXED
		noRepl  = unix.MAP_FIXED_NOREPLACE
		shared  = unix.MAP_SHARED
		private = unix.MAP_PRIVATE
	)
	for _, c := range []struct {
		what  string
		addr  uintptr
		n     uintptr
		flags int
		fd    int
		off   uintptr
		want  syscall.Errno
	}{
		{"anonymous: an unaligned offset before a length past the address space", 0, ^uintptr(0), anon, -1, 1, syscall.EINVAL},
		{"anonymous: an unaligned offset before EEXIST", m, pageSize, anon | noRepl, -1, pageSize - 1, syscall.EINVAL},
		{"anonymous: a length that wraps when rounded before an unaligned MAP_FIXED address", m + 1, ^uintptr(0), anon | fixed, -1, 0, syscall.ENOMEM},
		{"anonymous: a length past the user half before an unaligned MAP_FIXED address", m + 1, 1 << 47, anon | fixed, -1, 0, syscall.ENOMEM},
		{"anonymous: a MAP_FIXED range past the user half before its unaligned address", kernel + 1, 2 * pageSize, anon | fixed, -1, 0, syscall.ENOMEM},
		{"anonymous: a MAP_FIXED_NOREPLACE range past the user half before its unaligned address", kernel + 1, 2 * pageSize, anon | noRepl, -1, 0, syscall.ENOMEM},
		{"anonymous: a length of 0 before an unaligned MAP_FIXED address", m + 1, 0, anon | fixed, -1, 0, syscall.EINVAL},
		{"anonymous: an unaligned MAP_FIXED_NOREPLACE address before EEXIST", m + 1, pageSize, anon | noRepl, -1, 0, syscall.EINVAL},
		{"anonymous: EEXIST before a bad mapping type", m, pageSize, unix.MAP_ANONYMOUS | noRepl, -1, 0, syscall.EEXIST},
		{"anonymous: a bad mapping type", 0, pageSize, unix.MAP_ANONYMOUS, -1, 0, syscall.EINVAL},
		{"anonymous: MAP_SHARED_VALIDATE, a file mapping's type only", 0, pageSize, unix.MAP_ANONYMOUS | unix.MAP_SHARED_VALIDATE, -1, 0, syscall.EINVAL},
		{"file: an unaligned offset before a bad descriptor", 0, pageSize, private, -1, 1, syscall.EINVAL},
		{"file: a bad descriptor before a length of 0", 0, 0, private, -1, 0, syscall.EBADF},
		{"file: a length past the user half before an unaligned MAP_FIXED address", m + 1, 1 << 47, private | fixed, fd, 0, syscall.ENOMEM},
		{"file: an unaligned MAP_FIXED address before an offset past what a file holds", m + 1, 2 * pageSize, shared | fixed, fd, big, syscall.EINVAL},
		{"file: EEXIST before an offset past what a file holds", m, 2 * pageSize, shared | noRepl, fd, big, syscall.EEXIST},
		{"file: an offset past what a file holds before a bad mapping type", 0, 2 * pageSize, 0, fd, big, syscall.EOVERFLOW},
	} {
		p, e := rawMmap(c.addr, c.n, rw, c.flags, c.fd, c.off)
		if e != c.want {
			t.Errorf("%s: mmap(%#x, %#x, flags %#x, fd %d, off %#x) = %#x, %v; want %v (%d)",
				c.what, c.addr, c.n, c.flags, c.fd, c.off, p, e, c.want, int(c.want))
		}
		if e == 0 {
			syscall.Syscall(syscall.SYS_MUNMAP, p, c.n, 0)
		}
	}
}

// memoryBytes is what Linux's heuristic overcommit compares a request
// with: RAM and swap (/proc/meminfo), or on yolk the frames its
// allocator owns.
func memoryBytes(t *T) uint64 {
	if onYolk() {
		return uint64(stats(t).FramesAll) * pageSize
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatalf("open /proc/meminfo: %v", err)
	}
	defer f.Close()
	var kb uint64
	found := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		w := strings.Fields(s.Text())
		if len(w) >= 2 && (w[0] == "MemTotal:" || w[0] == "SwapTotal:") {
			v, err := strconv.ParseUint(w[1], 10, 64)
			if err != nil {
				t.Fatalf("/proc/meminfo: %q: %v", s.Text(), err)
			}
			kb += v
			found++
		}
	}
	if found != 2 {
		t.Fatalf("/proc/meminfo: no MemTotal and SwapTotal")
	}
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Skipf("vm.overcommit_memory is %q (%v), not the heuristic 0 this test checks", b, err)
	}
	return kb << 10
}

// testMemoryOvercommit: a single private writable mapping, or a shared
// anonymous one of any protection, of twice the machine's memory is
// ENOMEM, as Linux's heuristic overcommit refuses it (__vm_enough_memory
// from accountable_mapping and shmem_acct_size); the same size PROT_NONE,
// read-only, MAP_NORESERVE or shared of a file is taken; mprotect making
// the whole PROT_NONE reservation writable is ENOMEM (mprotect_fixup),
// one page of it is not. yolk used to take them all (a later touch then
// ran out of frames).
func testMemoryOvercommit(t *T) {
	mem := memoryBytes(t)
	n := uintptr(2*mem+pageSize-1) &^ (pageSize - 1)
	t.Logf("memory %d MiB, mappings of %d MiB", mem>>20, n>>20)
	f, err := os.CreateTemp("", "overcommit")
	if err != nil {
		t.Fatalf("CreateTemp: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write([]byte("overcommit")); err != nil {
		t.Fatalf("write: %v", err)
	}
	fd := int(f.Fd())
	const (
		rw   = unix.PROT_READ | unix.PROT_WRITE
		anon = unix.MAP_ANONYMOUS
	)
	for _, c := range []struct {
		what  string
		prot  int
		flags int
		fd    int
		want  syscall.Errno
	}{
		{"private writable", rw, anon | unix.MAP_PRIVATE, -1, syscall.ENOMEM},
		{"private PROT_NONE", unix.PROT_NONE, anon | unix.MAP_PRIVATE, -1, 0},
		{"private read-only", unix.PROT_READ, anon | unix.MAP_PRIVATE, -1, 0},
		{"private writable, MAP_NORESERVE", rw, anon | unix.MAP_PRIVATE | unix.MAP_NORESERVE, -1, 0},
		{"shared anonymous PROT_NONE", unix.PROT_NONE, anon | unix.MAP_SHARED, -1, syscall.ENOMEM},
		{"shared anonymous writable, MAP_NORESERVE", rw, anon | unix.MAP_SHARED | unix.MAP_NORESERVE, -1, 0},
		{"private writable of a file", rw, unix.MAP_PRIVATE, fd, syscall.ENOMEM},
		{"shared writable of a file", rw, unix.MAP_SHARED, fd, 0},
	} {
		p, e := rawMmap(0, n, c.prot, c.flags, c.fd, 0)
		if e != c.want {
			t.Errorf("mmap of %d MiB, %s: %#x, %v; want %v", n>>20, c.what, p, e, c.want)
		}
		if e == 0 {
			syscall.Syscall(syscall.SYS_MUNMAP, p, n, 0)
		}
	}
	p, e := rawMmap(0, n, unix.PROT_NONE, anon|unix.MAP_PRIVATE, -1, 0)
	if e != 0 {
		t.Fatalf("mmap of %d MiB PROT_NONE: %v", n>>20, e)
	}
	defer syscall.Syscall(syscall.SYS_MUNMAP, p, n, 0)
	if _, _, e := syscall.Syscall(syscall.SYS_MPROTECT, p, n, rw); e != syscall.ENOMEM {
		t.Errorf("mprotect of the whole reservation to read-write: %v; want ENOMEM", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MPROTECT, p+n/2, pageSize, rw); e != 0 {
		t.Fatalf("mprotect of one page of it to read-write: %v", e)
	}
	bytesAt(p+n/2, 1)[0] = 1
}
