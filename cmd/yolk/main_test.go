package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"yolk/qemu"
)

// The README's promise, end to end through the command: an unmodified Go
// program of another module is built with "yolk build" and booted with
// "yolk run" (accelerator from $YOLK_ACCEL, as TestGuest: auto, kvm or
// tcg), sees its arguments, environment and -smp CPUs, and the command
// exits with the program's status: 0 on return, 3 on os.Exit(3), 2 on a
// panic, a breakpoint (SIGTRAP, as on Linux) or a signal frame whose RIP
// is not canonical (SIGSEGV), 7 from where a frame with reserved MXCSR
// bits returns to, 125 after a kernel fault report — also when the fault happens on
// another CPU than the boot CPU (the report names it and stops the
// others), while the faulting CPU holds the console lock, when a trap
// handler outgrows its trap stack, or when traps nest too deep (the
// report lists the traps the double fault nested in). This needs
// QEMU and a booting kernel.
func TestBuildAndRunProgram(t *testing.T) {
	kreport := []string{"yolk: fault: page fault (#PF) vector=14", "address=0xffffa00000000000", "yolk/kernel.crashKernel", "yolk: exit 125"}
	buildAndRun(t, "amd64", []runCase{
		{"ok", 1, 0, nil}, {"exit3", 1, 3, nil}, {"panic", 1, 2, []string{"panic: boom"}},
		{"nil", 1, 2, []string{"panic: runtime error: invalid memory address or nil pointer dereference"}},
		{"kfault", 1, 125, kreport},
		{"kconsole", 1, 125, kreport},
		{"kfaultcpu1", 4, 125, append([]string{"yolk: cpu=1 (of 4; the others are stopped)"}, kreport...)},
		{"ktrapstack", 1, 125, []string{"kernel stack overflow", "yolk/kernel.eatStack", "yolk: exit 125"}},
		{"ktrapnest", 1, 125, []string{"yolk: fault: double fault (#DF)", "trap stack overflow or nesting too deep",
			"yolk: nested in trap level 0: breakpoint (#BP)", "yolk: nested in trap level 3: breakpoint (#BP)", "yolk/kernel.sysYolk", "yolk: exit 125"}},
		{"cpus", 3, 0, []string{"NumCPU=3 GOMAXPROCS=3", "3 CPUs"}},
		{"poweroff", 1, 0, []string{"yolk: reboot: power off"}},
		{"sigterm", 2, 128 + 15, []string{"yolk: killed by signal 15"}},
		{"userfault", 1, 125, []string{"yolk: fault: page fault (#PF) vector=14", "address=0x10 (not mapped) write", "main.main", "yolk: exit 125"}},
		{"breakpoint", 1, 2, []string{"SIGTRAP: trace trap", "sigcode=128", "main.main"}},
		{"notestcalls", 1, 0, []string{"crash: function not implemented", "yolk: syscall ? (4099) not implemented: ENOSYS"}},
		{"sigret-mxcsr", 1, 7, nil},
		{"sigret-noncanon", 1, 2, []string{"pc:0x8000000000000000"}},
	})
}

// TestBuildAndRunProgramArm64 is TestBuildAndRunProgram for an arm64 build
// on QEMU virt: the same statuses through semihosting, and the arm64 fault
// report (syndrome, fault address, X0-X30, symbolized backtrace).
func TestBuildAndRunProgramArm64(t *testing.T) {
	kreport := []string{"yolk: fault: data abort esr=", "address=0xffffa00000000000 (not mapped) write", "yolk: x00=", "yolk/kernel.crashKernel", "yolk: exit 125"}
	buildAndRun(t, "arm64", []runCase{
		{"ok", 1, 0, nil}, {"exit3", 1, 3, nil}, {"panic", 1, 2, []string{"panic: boom"}},
		{"nil", 1, 2, []string{"panic: runtime error: invalid memory address or nil pointer dereference"}},
		{"kfault", 1, 125, kreport},
		{"kconsole", 1, 125, kreport},
		{"kfaultcpu1", 2, 125, append([]string{"yolk: cpu=1 (of 2; the others are stopped)"}, kreport...)},
		{"ktrapstack", 1, 125, []string{"trap stack overflow", "kernel stack overflow", "yolk: exit 125"}},
		{"ktrapnest", 1, 125, []string{"trap stack overflow", "nesting too deep", "yolk: exit 125"}},
		{"cpus", 2, 0, []string{"NumCPU=2 GOMAXPROCS=2", "2 CPUs"}},
		{"poweroff", 1, 0, []string{"yolk: reboot: power off"}},
		{"sigterm", 2, 128 + 15, []string{"yolk: killed by signal 15"}},
		{"userfault", 1, 125, []string{"yolk: fault: data abort esr=", "address=0x10 (not mapped) write", "yolk: x00=", "main.main", "yolk: exit 125"}},
		{"breakpoint", 1, 2, []string{"SIGTRAP: trace trap", "main.main"}},
		{"notestcalls", 1, 0, []string{"crash: function not implemented"}},
	})
}

// runCase is one boot of the test program: its last argument, CPUs, the
// exit status and what the output must contain besides the usual.
type runCase struct {
	arg  string
	smp  int
	code int
	want []string
}

func buildAndRun(t *testing.T, arch string, cases []runCase) {
	// Choose once, so that "auto" probes once and not in every subtest.
	choice, err := qemu.ChooseAccel(t.Context(), qemu.AccelOptions{Mode: os.Getenv("YOLK_ACCEL"), Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(choice)
	tmp := t.TempDir()
	yolk := buildYolk(t)
	app := writeApp(t, tmp, "app", `package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"yolk/kernel/abi"
)

var nilPtr *int

// crash asks yolk to fault in kernel context (0x1003: mode, 1+CPU or 0).
func crash(mode, cpu1 uintptr) syscall.Errno {
	_, _, e := syscall.Syscall(0x1003, mode, cpu1, 0)
	return e
}

func main() {
	fmt.Printf("args=%q GREETING=%q\n", os.Args[1:], os.Getenv("GREETING"))
	// yolk's private calls (crash) are there only for an image that asks.
	abi.TestCalls = os.Args[len(os.Args)-1] != "notestcalls"
	switch os.Args[len(os.Args)-1] {
	case "exit3":
		os.Exit(3)
	case "notestcalls":
		fmt.Println("crash:", crash(0, 0))
	case "panic":
		panic("boom")
	case "breakpoint":
		runtime.Breakpoint() // SIGTRAP, as on Linux: the runtime's "trace trap", status 2
	case "nil":
		*nilPtr = 1
	case "kfault":
		crash(0, 0)
	case "kconsole":
		crash(1, 0) // while holding the console lock
	case "ktrapstack":
		crash(2, 0) // a trap handler outgrows its trap-stack slice
	case "ktrapnest":
		crash(3, 0) // traps nested deeper than the trap stack has slices
	case "kfaultcpu1":
		// Threads try until one runs on CPU 1.
		for i := 0; i < 8; i++ {
			go func() {
				runtime.LockOSThread()
				for crash(0, 2) == syscall.EAGAIN {
				}
			}()
		}
		select {}
	case "cpus":
		fmt.Printf("NumCPU=%d GOMAXPROCS=%d\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	case "poweroff":
		if err := syscall.Reboot(0x12345678); err != syscall.EINVAL {
			fmt.Println("bad reboot command:", err)
		}
		syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
		fmt.Println("still running after reboot")
		os.Exit(1)
	case "sigterm":
		syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
		select {}
	case "sigret-mxcsr":
		// Reserved MXCSR bits are cleared, as Linux does, before FXRSTOR
		// would fault on them in the kernel: the frame resumes at exit7.
		sigreturnTo(exit7Addr(), 0xffffffff)
	case "sigret-noncanon":
		// A non-canonical RIP is SIGSEGV to the thread (IRETQ would fault
		// in the kernel): the runtime's handler sees that PC.
		sigreturnTo(0x8000000000000000, 0x1f80)
	case "userfault":
		// Without the runtime's SIGSEGV handler, a fault in
		// application code is the kernel's to report.
		var dfl [4]uint64
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGSEGV), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
		*(*int)(unsafe.Pointer(badAddr)) = 1
	}
}

var badAddr uintptr = 0x10
`)
	// rt_sigreturn through hand-made frames (amd64): the kernel checks a
	// frame before it restores it (sigreturnAt, fakeFrame).
	os.WriteFile(filepath.Join(app, "sigret_amd64.s"), []byte(`#include "textflag.h"

// func sigreturnAt(sp uintptr): rt_sigreturn with SP at sp.
TEXT ·sigreturnAt(SB),NOSPLIT|NOFRAME,$0-8
	MOVQ	sp+0(FP), SP
	MOVQ	$15, AX
	SYSCALL
	BYTE	$0xCC

// func exit7(): exit_group(7), where a good frame returns to.
TEXT ·exit7(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$7, DI
	MOVQ	$231, AX
	SYSCALL
	BYTE	$0xCC

TEXT ·exit7PC(SB),NOSPLIT,$0-8
	MOVQ	$·exit7(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
`), 0o644)
	os.WriteFile(filepath.Join(app, "sigret_amd64.go"), []byte(`package main

import "unsafe"

func sigreturnAt(sp uintptr)
func exit7PC() uintptr

var frame [8192]byte

// sigreturnTo returns from a signal frame made by hand (Linux's
// ucontext: gregs at 40, fpregs at 224; an FXSAVE area after it) that
// restores rip with the MXCSR value mxcsr.
func sigreturnTo(rip uint64, mxcsr uint32) {
	uc := (uintptr(unsafe.Pointer(&frame[0])) + 63) &^ 63
	fx := uc + 1024
	g := (*[23]uint64)(unsafe.Pointer(uc + 40))
	g[15], g[16], g[17], g[18] = uint64(uc+8192-256), rip, 0x202, 0x33|0x2b<<48
	*(*uintptr)(unsafe.Pointer(uc + 224)) = fx
	*(*uint32)(unsafe.Pointer(fx + 24)) = mxcsr
	sigreturnAt(uc)
}

func exit7Addr() uint64 { return uint64(exit7PC()) }
`), 0o644)
	os.WriteFile(filepath.Join(app, "sigret_other.go"), []byte(`//go:build !amd64

package main

func sigreturnTo(rip uint64, mxcsr uint32) { panic("amd64 only") }
func exit7Addr() uint64                   { return 0 }
`), 0o644)
	img := filepath.Join(tmp, "app.elf")
	if out, err := exec.Command(yolk, "build", "-arch", arch, "-o", img, app).CombinedOutput(); err != nil {
		t.Fatalf("yolk build: %v\n%s", err, out)
	}
	for _, c := range cases {
		t.Run(c.arg, func(t *testing.T) {
			cmd := exec.Command(yolk, "run", "-accel="+choice.Accel, "-timeout=2m", "-smp", fmt.Sprint(c.smp), "-e", "GREETING=hello world", img, "a b", c.arg)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit status %d, want %d", code, c.code)
			}
			if first, _, _ := strings.Cut(stderr.String(), "\n"); first != "yolk: accel "+choice.Accel+" (forced)" {
				t.Errorf("first stderr line %q", first)
			}
			want := `args=["a b" "` + c.arg + `"] GREETING="hello world"`
			if !strings.Contains(stdout.String(), want+"\n") {
				t.Errorf("stdout lacks %q", want)
			}
			for _, want := range c.want {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	yolk := buildYolk(t)
	img := fakeELF(t, elf.EM_X86_64)
	armImg := fakeELF(t, elf.EM_AARCH64)
	notELF := filepath.Join(t.TempDir(), "not.elf")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o644)
	// An ISO 9660 volume descriptor's identifier is all yolk run reads.
	iso := filepath.Join(t.TempDir(), "fake.iso")
	os.WriteFile(iso, append(make([]byte, 0x8001), "CD001"...), 0o644)
	// A raw disk: "EFI PART" in its second sector; GCE's archive by name.
	gpt := filepath.Join(t.TempDir(), "disk.raw")
	os.WriteFile(gpt, append(make([]byte, 512), "EFI PART"...), 0o644)
	tgz := filepath.Join(t.TempDir(), "disk.tar.gz")
	os.WriteFile(tgz, []byte("\x1f\x8b"), 0o644)
	for _, c := range []struct {
		args []string
		env  []string
		code int
		msg  string
	}{
		{nil, nil, 2, "usage:"},
		{[]string{"frob"}, nil, 2, `unknown command "frob"`},
		{[]string{"run"}, nil, 2, "usage: yolk run"},
		{[]string{"run", "/no/such.elf"}, nil, 2, "no such file"},
		{[]string{"run", "-accel=hvf", img}, nil, 2, `accelerator "hvf"`},
		{[]string{"run", "-e", "NOVALUE", img}, nil, 2, "want KEY=VALUE"},
		{[]string{"run", "-smp", "65", img}, nil, 2, "-smp 65: the kernel runs 1 to 64 CPUs"},
		{[]string{"run", "-smp", "0", img}, nil, 2, "-smp 0: the kernel runs 1 to 64 CPUs"},
		{[]string{"run", img}, []string{"PATH=/nonexistent", "YOLK_QEMU="}, 127,
			"qemu-system-x86_64 is not installed; install it with: apt-get update && apt-get install -y qemu-system-x86"},
		{[]string{"run", armImg}, []string{"PATH=/nonexistent", "YOLK_QEMU_ARM64="}, 127,
			"qemu-system-aarch64 is not installed; install it with: apt-get update && apt-get install -y qemu-system-arm"},
		{[]string{"run", "-machine", "q35", armImg}, nil, 2, "-machine q35 is an amd64 machine"},
		{[]string{"run", "-machine", "virt", img}, nil, 2, "-machine virt is an arm64 machine"},
		{[]string{"run", notELF}, nil, 2, "not an ELF"},
		{[]string{"build", "-arch", "riscv64", "."}, nil, 2, `architecture "riscv64": want amd64 or arm64`},
		{[]string{"build"}, nil, 2, "usage: yolk build"},
		{[]string{"build", "-e", "A=B", "."}, nil, 2, "-firmware and -e are for -board rpi3 or pc"},
		{[]string{"build", "-dir", ".", "."}, nil, 2, "-dir is for -board pc"},
		{[]string{"build", "-board", "pc", "-firmware", "fw", "."}, nil, 2, "-firmware is for -board rpi3"},
		{[]string{"build", "-board", "pc", "-arch", "arm64", "."}, nil, 2, "-board pc is an amd64 board"},
		{[]string{"build", "-board", "rpi0", "."}, nil, 2, `-board "rpi0": want rpi3 or pc`},
		{[]string{"run", "-board", "pc", "-e", "A=B", iso}, nil, 2, "a PC image carries its command line"},
		{[]string{"run", "-board", "pc", "-dir", ".", iso}, nil, 2, "a PC image carries its command line"},
		{[]string{"run", "-board", "pc", iso, "arg"}, nil, 2, "a PC image carries its command line"},
		{[]string{"run", "-board", "pc", "-share", ".", iso}, nil, 2, "a PC image carries its command line"},
		{[]string{"run", "-share", "/no/such/dir", img}, nil, 2, "share: host directory /no/such/dir: no such file or directory"},
		{[]string{"run", "-share", ".:relative", img}, nil, 2, `guest path "relative": want a clean absolute path`},
		{[]string{"run", "-board", "rpi3", "-share", ".", "."}, nil, 2, "-board rpi3 has no virtio: no -share"},
		{[]string{"run", "-board", "pc", "-firmware", "efi", iso}, nil, 2, `-firmware "efi": want bios or uefi`},
		{[]string{"run", "-board", "pc", "-gdb", "1234", iso}, nil, 2, "-gdb boots ELF images"},
		{[]string{"run", "-board", "pc", img}, nil, 2, "is not a PC image"},
		{[]string{"run", "-firmware", "uefi", img}, nil, 2, "-firmware goes with -board pc"},
		{[]string{"run", "-disk", "nvme", img}, nil, 2, "-disk: disk: "}, // without -board pc, a disk file
		{[]string{"run", "-disk", img + ",if=scsi", img}, nil, 2, `option "if=scsi": want if=virtio, if=nvme or ro`},
		{[]string{"run", "-board", "pc", "-disk", "scsi", gpt}, nil, 2, `-disk "scsi": want virtio-scsi, nvme, virtio-blk`},
		{[]string{"run", "-board", "pc", "-disk", "nvme", iso}, nil, 2, "-disk is for a disk image"},
		{[]string{"run", "-board", "pc", "-e", "A=B", gpt}, nil, 2, "a disk image's are in its grub.cfg"},
		{[]string{"run", "-board", "pc", tgz}, nil, 2, "unpack GCE's disk.raw first"},
		{[]string{"image"}, nil, 2, "usage: yolk image"},
		{[]string{"image", img}, nil, 2, "usage: yolk image"},
		{[]string{"image", "-o", "x.raw", armImg}, nil, 2, "is an arm64 image: a disk image boots a PC"},
		{[]string{"image", "-o", "x.raw", notELF}, nil, 2, "yolk image: "},
		{[]string{"image", "-o", "x.raw", "-format", "vmdk", img}, nil, 2, `-format "vmdk": want raw, gce, qcow2`},
		{[]string{"image", "-o", "x.raw", "-size", "2X", img}, nil, 2, `-size: size "2X"`},
		{[]string{"image", "-o", "x.raw", img, `a"b`}, nil, 2, "GRUB's command line cannot carry"},
		{[]string{"image", "-o", "x.raw", "-e", "A=it's", img}, nil, 2, "GRUB's command line cannot carry"},
		{[]string{"run", iso}, nil, 2, "is a PC image: boot it with yolk run -board pc"},
		{[]string{"run", "-board", "pc", "-machine", "microvm", iso}, nil, 2, "-board pc boots on q35 or pc, not -machine microvm"},
	} {
		cmd := exec.Command(yolk, c.args...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(string(out), c.msg) {
			t.Errorf("yolk %q: %v\n%s", c.args, err, out)
		}
	}
}

// fakeELF writes an ELF64 header for machine, with no segments: enough for
// the checks yolk run makes before it starts QEMU.
func fakeELF(t *testing.T, machine elf.Machine) string {
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(h[16:], uint16(elf.ET_EXEC))
	le.PutUint16(h[18:], uint16(machine))
	le.PutUint32(h[20:], 1)
	le.PutUint16(h[52:], 64) // e_ehsize
	le.PutUint16(h[54:], 56) // e_phentsize
	le.PutUint16(h[58:], 64) // e_shentsize
	p := filepath.Join(t.TempDir(), machine.String()+".elf")
	if err := os.WriteFile(p, h, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunNet: yolk run's network is the user network unless -net says
// otherwise, none on the rpi3 board; -p needs the user network.
func TestRunNet(t *testing.T) {
	fwd := []qemu.Forward{{HostAddr: "127.0.0.1", HostPort: 8080, GuestPort: 80}}
	for _, c := range []struct {
		net    string
		netSet bool
		fwds   []qemu.Forward
		board  string
		want   string
		err    bool
	}{
		{want: "user"},
		{fwds: fwd, want: "user"},
		{net: "none", netSet: true, want: "none"},
		{net: "tap:tap0", netSet: true, want: "tap:tap0"},
		{net: "user", netSet: true, board: "pc", want: "user"},
		{board: "rpi3", want: "none"},
		{net: "user", netSet: true, board: "rpi3", err: true},
		{board: "rpi3", fwds: fwd, err: true},
		{net: "none", netSet: true, fwds: fwd, err: true},
		{net: "tap:tap0", netSet: true, fwds: fwd, err: true},
		{net: "slirp", netSet: true, err: true},
	} {
		got, err := runNet(c.net, c.netSet, c.fwds, c.board)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("runNet(%q, %v, %v, %q) = %q, %v; want %q, error %v", c.net, c.netSet, c.fwds, c.board, got, err, c.want, c.err)
		}
	}
}
