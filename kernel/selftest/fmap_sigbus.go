package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SIGBUS past a file's end (docs/user-memory.md): touching a page of a
// file mapping that lies wholly past the file's end — the mapping is
// longer than the file, or the file was shrunk after mmap — raises
// SIGBUS with BUS_ADRERR and the address touched, as Linux; the bytes of
// the last page past the end read as zeroes; the file grown again makes
// the pages reachable. Under debug.SetPanicOnFault the Go runtime turns
// SIGBUS and SIGSEGV into the same panic, so faultSignal records what
// the kernel delivered with a handler of its own in front of the
// runtime's (faultsig_$GOARCH.s).

func init() {
	tests = append(tests,
		test{"TestFileMmapSigbus", testFileMmapSigbus},
		test{"TestShareMmapSigbus", testShareMmapSigbus},
	)
}

// Written by faultSigRecord.
var (
	faultSigNo, faultSigCode  int32
	faultSigAddr, faultSigOld uintptr
)

func faultSigPC() uintptr

const busAdrerr = 2 // BUS_ADRERR

// A fault as faultSignal saw it: the signal (0 if the access did not
// fault), its si_code and si_addr.
type faultSeen struct {
	sig  syscall.Signal
	code int32
	addr uintptr
}

// faultSignal touches *p (a write if write) and reports the signal it
// raised, if any.
func faultSignal(t *T, p *byte, write bool) faultSeen {
	return faultSignalOf(t, func() bool { return touchFaults(p, write) })
}

// faultSignalOf runs touch, which reports whether it faulted, and
// reports the signal it raised, if any. faultSigRecord is the SIGBUS and
// SIGSEGV handler meanwhile; it goes on to the runtime's, which panics.
func faultSignalOf(t *T, touch func() bool) faultSeen {
	var act, oldBus, oldSegv kernelSigaction
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGBUS), 0, uintptr(unsafe.Pointer(&oldBus)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction(SIGBUS): %v", e)
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), 0, uintptr(unsafe.Pointer(&oldSegv)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction(SIGSEGV): %v", e)
	}
	if oldBus.handler != oldSegv.handler || oldBus.handler <= 1 {
		t.Fatalf("the runtime's SIGBUS and SIGSEGV handlers: %#x, %#x", oldBus.handler, oldSegv.handler)
	}
	faultSigOld = oldBus.handler
	faultSigNo, faultSigCode, faultSigAddr = 0, 0, 0
	act = oldBus // the runtime's flags, restorer and mask
	act.handler = faultSigPC()
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGBUS), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	faulted := touch()
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGBUS), uintptr(unsafe.Pointer(&oldBus)), 0, 8, 0, 0)
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&oldSegv)), 0, 8, 0, 0)
	if !faulted {
		return faultSeen{}
	}
	return faultSeen{syscall.Signal(faultSigNo), faultSigCode, faultSigAddr}
}

// touchFaults reads or writes *p and reports whether that faulted.
func touchFaults(p *byte, write bool) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			faulted = true
		}
	}()
	if write {
		*(*volatileByte)(p) = 1
	} else {
		_ = *(*volatileByte)(p)
	}
	return false
}

// wantBus checks that touching *p raises SIGBUS, BUS_ADRERR, at p.
func wantBus(t *T, what string, p *byte, write bool) {
	got := faultSignal(t, p, write)
	want := faultSeen{syscall.SIGBUS, busAdrerr, uintptr(unsafe.Pointer(p))}
	if got != want {
		t.Errorf("%s: signal %d (%v) code %d addr %#x; want SIGBUS code %d (BUS_ADRERR) addr %#x",
			what, int(got.sig), got.sig, got.code, got.addr, want.code, want.addr)
	}
}

// wantNoFault checks that touching *p does not fault.
func wantNoFault(t *T, what string, p *byte, write bool) {
	if got := faultSignal(t, p, write); got.sig != 0 {
		t.Errorf("%s: signal %d (%v) code %d addr %#x; want no fault", what, int(got.sig), got.sig, got.code, got.addr)
	}
}

func testFileMmapSigbus(t *T) {
	dir, err := os.MkdirTemp("", "fmapbus")
	if err != nil {
		t.Fatalf("MkdirTemp: %v", err)
	}
	defer os.RemoveAll(dir)
	fmapSigbus(t, dir)
	mmapWriteBackUntouched(t, dir)
}

func testShareMmapSigbus(t *T) {
	dir := os.Getenv(envShareDir)
	if dir == "" {
		t.Skipf("no share: boot with yolk run -share (the qemu package's TestGuest gives one on every machine with virtio)")
	}
	dir = filepath.Join(dir, "fmapbus")
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	defer os.RemoveAll(dir)
	fmapSigbus(t, dir)
	mmapWriteBackUntouched(t, dir)
}

// mmapWriteBackUntouched: a shared mapping two pages long of a 100-byte
// file; a pwrite through the descriptor grows the file into the second
// page, which the program never touched; munmap writes back the first
// page and leaves the pwrite's byte (on Linux both are the page cache's;
// an in-memory file's mapping is its pages).
func mmapWriteBackUntouched(t *T, dir string) {
	name := filepath.Join(dir, "wb")
	if err := os.WriteFile(name, fmapPattern(100, 5), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	sh, err := unix.Mmap(fd, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	sh[10] = 'a'
	if _, err := unix.Pwrite(fd, []byte{'X'}, pageSize+904); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	if err := unix.Munmap(sh); err != nil {
		t.Fatalf("munmap: %v", err)
	}
	got := make([]byte, 1)
	for _, c := range []struct {
		off  int64
		want byte
	}{{10, 'a'}, {pageSize + 904, 'X'}} {
		if n, err := unix.Pread(fd, got, c.off); n != 1 || err != nil || got[0] != c.want {
			t.Errorf("after munmap, byte %d: %q (%d, %v), want %q", c.off, got[:n], n, err, c.want)
		}
	}
}

// fmapSigbus: a file of a page and 100 bytes, mapped four pages long,
// shared and private.
func fmapSigbus(t *T, dir string) {
	name := filepath.Join(dir, "f")
	size := pageSize + 100
	want := fmapPattern(size, 11)
	if err := os.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer unix.Close(fd)
	sh, err := unix.Mmap(fd, 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap shared: %v", err)
	}
	defer unix.Munmap(sh)
	pr, err := unix.Mmap(fd, 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap private: %v", err)
	}
	defer unix.Munmap(pr)

	// The last page reads zeroes past the end; the pages after it fault.
	wantNoFault(t, "shared: the last page past the end", &sh[size+200], false)
	wantNoFault(t, "private: the last page past the end", &pr[2*pageSize-1], false)
	if !bytes.Equal(sh[:size], want) || !bytes.Equal(pr[:size], want) || sh[size+200] != 0 || pr[2*pageSize-1] != 0 {
		t.Errorf("the mappings do not hold the file's bytes and zeroes after them")
	}
	wantBus(t, "shared: read of a page past the end", &sh[2*pageSize+123], false)
	wantBus(t, "shared: write to a page past the end", &sh[3*pageSize+5], true)
	wantBus(t, "private: read of a page past the end", &pr[2*pageSize+7], false)
	wantBus(t, "private: write to a page past the end", &pr[4*pageSize-1], true)

	// Grown: the pages are the file's again, zeroes, and a write through
	// the shared mapping is the file's.
	if err := unix.Ftruncate(fd, 4*pageSize); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	wantNoFault(t, "shared: read after the file grew", &sh[2*pageSize+123], false)
	wantNoFault(t, "shared: write after the file grew", &sh[3*pageSize+5], true)
	wantNoFault(t, "private: read after the file grew", &pr[2*pageSize+7], false)
	wantNoFault(t, "private: write after the file grew", &pr[4*pageSize-1], true)
	if sh[2*pageSize+123] != 0 || pr[2*pageSize+7] != 0 {
		t.Errorf("pages past the old end are not zero after the file grew: %#x %#x", sh[2*pageSize+123], pr[2*pageSize+7])
	}
	sh[3*pageSize+5] = 'G'
	if err := unix.Msync(sh, unix.MS_SYNC); err != nil {
		t.Fatalf("msync: %v", err)
	}
	got := make([]byte, 1)
	if n, err := unix.Pread(fd, got, 3*pageSize+5); n != 1 || err != nil || got[0] != 'G' {
		t.Errorf("a write through the mapping after the file grew: pread %d, %v, %q; want \"G\"", n, err, got[:n])
	}

	// Shrunk while mapped: the pages past the new end fault again, the
	// first still reads.
	if err := unix.Ftruncate(fd, 100); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	wantNoFault(t, "shared: the first page after the file shrank", &sh[pageSize-1], false)
	wantBus(t, "shared: read of a page past the new end", &sh[pageSize+1], false)
	wantBus(t, "shared: write to a page past the new end", &sh[3*pageSize+5], true)
	wantBus(t, "private: read of a page past the new end", &pr[2*pageSize+7], false)
	if sh[99] != want[99] {
		t.Errorf("the first page after the file shrank: %#x, want %#x", sh[99], want[99])
	}

	// The size changed by path and through other descriptors: truncate
	// grows it, open with O_TRUNC empties it (every page faults), a
	// write past the end grows it again.
	if err := os.Truncate(name, 2*pageSize); err != nil {
		t.Fatalf("truncate: %v", err)
	}
	wantNoFault(t, "shared: read after truncate(2) grew the file", &sh[pageSize+1], false)
	wantBus(t, "shared: read past the end truncate(2) set", &sh[2*pageSize], false)
	fd2, err := unix.Open(name, unix.O_RDWR|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open O_TRUNC: %v", err)
	}
	defer unix.Close(fd2)
	wantBus(t, "shared: read of the first page after O_TRUNC", &sh[0], false)
	wantBus(t, "private: read of the first page after O_TRUNC", &pr[1], false)
	if _, err := unix.Pwrite(fd2, []byte{'W'}, 3*pageSize); err != nil {
		t.Fatalf("pwrite: %v", err)
	}
	wantNoFault(t, "shared: read after a write past the end grew the file", &sh[3*pageSize+5], false)
	wantNoFault(t, "shared: the first page after a write past the end", &sh[0], false)
}
