package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// envNoExe, set by the qemu package's TestGuest where the machine has no
// /proc/self/exe to give (the Raspberry Pi has no virtio; a PC image
// carries its own command line), is the reason TestProcSelfExe skips.
const envNoExe = "YOLK_NO_EXE"

// testProcSelfExe: yolk run gives the guest its image file, read-only on a
// share of its own (qemu/exe.go). os.Executable (readlink of
// /proc/self/exe) names it, /proc/1/exe is the same link, and the file
// opened through /proc/self/exe is this program: its build information is
// the running program's, and it is an ELF of this architecture.
func testProcSelfExe(t *T) {
	exe, err := os.Executable()
	if errors.Is(err, fs.ErrNotExist) {
		if why := os.Getenv(envNoExe); why != "" {
			t.Skipf("no /proc/self/exe: %s", why)
		}
		t.Fatalf("os.Executable: %v (yolk run gives the image file where the machine has virtio and a share slot is free; %s names why not)", err, envNoExe)
	}
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	if !strings.HasPrefix(exe, "/yolk/exe/") {
		t.Errorf("os.Executable = %q, want a file in /yolk/exe", exe)
	}
	if l, err := os.Readlink("/proc/1/exe"); err != nil || l != exe {
		t.Errorf("readlink /proc/1/exe = %q, %v; want %q", l, err, exe)
	}
	if st, err := os.Lstat("/proc/self/exe"); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("lstat /proc/self/exe: %v, %v; want a symbolic link", st, err)
	}
	if _, err := os.OpenFile("/proc/self/exe", os.O_RDONLY|syscall.O_NOFOLLOW, 0); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("open /proc/self/exe O_NOFOLLOW: %v, want ELOOP", err)
	}

	want, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatalf("debug.ReadBuildInfo: no build information")
	}
	got, err := buildinfo.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatalf("buildinfo.ReadFile(/proc/self/exe): %v", err)
	}
	if got.GoVersion != want.GoVersion || got.GoVersion != runtime.Version() {
		t.Errorf("the file's Go version %q, the program's %q (runtime %q)", got.GoVersion, want.GoVersion, runtime.Version())
	}
	t.Logf("os.Executable %s: %s, module %s, %s", exe, got.Path, got.Main.Path, got.GoVersion)
	if got.Path != want.Path || got.Main.Path != want.Main.Path || got.Main.Path == "" {
		t.Errorf("the file's package %q module %q, the program's %q %q", got.Path, got.Main.Path, want.Path, want.Main.Path)
	}

	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatalf("open /proc/self/exe: %v", err)
	}
	defer f.Close()
	var h [64]byte // Elf64_Ehdr
	if _, err := io.ReadFull(f, h[:]); err != nil {
		t.Fatalf("read the ELF header: %v", err)
	}
	machine := map[string]uint16{"amd64": 62, "arm64": 183}[runtime.GOARCH] // EM_X86_64, EM_AARCH64
	if !bytes.Equal(h[:4], []byte("\x7fELF")) || h[4] != 2 || h[5] != 1 || binary.LittleEndian.Uint16(h[18:]) != machine {
		t.Errorf("ELF header % x: want a 64-bit little-endian ELF for machine %d", h[:20], machine)
	}
	fst, err := f.Stat()
	st, serr := os.Stat("/proc/self/exe")
	if err != nil || serr != nil || !fst.Mode().IsRegular() || fst.Size() != st.Size() || fst.Size() < 1<<20 {
		t.Errorf("fstat %v, %v; stat of /proc/self/exe %v, %v: want the same regular file", fst, err, st, serr)
	}
	if _, err := os.OpenFile(exe, os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("open %s for writing: %v, want EROFS (a read-only share)", exe, err)
	}
}
