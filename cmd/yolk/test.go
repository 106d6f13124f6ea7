package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
)

const testUsage = `usage: yolk test [flags] [packages] [-args test binary arguments]

Builds each package's test binary with the kernel linked in, boots it in
QEMU and prints "ok", "FAIL" and "?" lines as go test does; exits 1 if any
package failed. Packages are go test's patterns (./..., ./sync/ces, strings).

Test flags (passed to the test binary as -test.X):
  -run, -skip, -bench, -benchtime, -count, -timeout (default 10m), -cpu, -v, -short
Guest flags:
  -arch amd64|arm64 (default $GOARCH if one of them, else amd64),
  -accel auto|kvm|tcg, -machine microvm|pc|q35 (amd64) or virt|virt-gicv3 (arm64),
  -m 512M, -smp 1, -e KEY=VALUE (repeatable)

QEMU is killed a minute after -timeout, as go test kills a test binary.
`

// Flags of yolk test: those passed to the test binary as -test.NAME, and
// those that configure the guest.
var (
	testValueFlags = map[string]bool{"run": true, "skip": true, "bench": true, "benchtime": true, "count": true, "timeout": true, "cpu": true}
	testBoolFlags  = map[string]bool{"v": true, "short": true}
	guestFlags     = map[string]bool{"arch": true, "accel": true, "machine": true, "m": true, "smp": true, "e": true}
)

// testConfig is a parsed yolk test command line.
type testConfig struct {
	patterns []string
	testArgs []string // for the test binary: -test.X flags, then what follows -args
	verbose  bool
	bench    bool
	timeout  time.Duration // the test binary's -test.timeout; 0: none
	arch     string
	accel    string
	machine  string
	mem      string
	smp      int
	env      []string
}

// parseTestArgs parses yolk test's command line. Flags and package patterns
// may be mixed, as for go test; everything after -args goes to the test
// binary unchanged.
func parseTestArgs(args []string) (*testConfig, error) {
	c := &testConfig{timeout: 10 * time.Minute, accel: "auto", mem: "512M", smp: 1}
	var pass []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--args" {
			pass = args[i+1:]
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			c.patterns = append(c.patterns, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.TrimPrefix(name, "test.")
		switch {
		case testBoolFlags[name]:
			on := true
			if hasVal {
				b, err := strconv.ParseBool(val)
				if err != nil {
					return nil, fmt.Errorf("invalid boolean value %q for -%s", val, name)
				}
				on = b
			}
			if name == "v" {
				c.verbose = on
			}
			c.testArgs = append(c.testArgs, fmt.Sprintf("-test.%s=%t", name, on))
			continue
		case testValueFlags[name] || guestFlags[name]:
		default:
			return nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "timeout":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("invalid value %q for -timeout: want a duration such as 10m", val)
			}
			c.timeout = d
		case "bench":
			c.bench = val != ""
			c.testArgs = append(c.testArgs, "-test.bench="+val)
		case "arch":
			c.arch = val
		case "accel":
			c.accel = val
		case "machine":
			c.machine = val
		case "m":
			c.mem = val
		case "smp":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > qemu.MaxCPUs {
				return nil, fmt.Errorf("-smp %s: the kernel runs 1 to %d CPUs", val, qemu.MaxCPUs)
			}
			c.smp = n
		case "e":
			var e envFlag
			if err := e.Set(val); err != nil {
				return nil, fmt.Errorf("-e %s: %v", val, err)
			}
			c.env = append(c.env, val)
		default:
			c.testArgs = append(c.testArgs, "-test."+name+"="+val)
		}
	}
	// go test always passes these two.
	c.testArgs = append(c.testArgs, "-test.paniconexit0", "-test.timeout="+c.timeout.String())
	c.testArgs = append(c.testArgs, pass...)
	arch, err := targetArch(c.arch)
	if err != nil {
		return nil, err
	}
	c.arch = arch
	if c.machine == "" {
		c.machine = qemu.MachinesFor(arch)[0]
	}
	if other := qemu.ArchOfMachine(c.machine); other != arch {
		return nil, fmt.Errorf("-machine %s: want one of %s for %s", c.machine, strings.Join(qemu.MachinesFor(arch), ", "), arch)
	}
	return c, nil
}

// listedPackage is what yolk test reads from go list -json.
type listedPackage struct {
	ImportPath   string
	Dir          string
	Name         string
	Standard     bool
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// listPackages resolves go test patterns with go list, for the guest's
// GOOS and GOARCH (arch), so that a package's arch-specific test files
// count. Packages that cannot be loaded come back with Error set.
func listPackages(ctx context.Context, arch string, patterns []string) ([]listedPackage, error) {
	args := append([]string{"list", "-e", "-json=ImportPath,Dir,Name,Standard,TestGoFiles,XTestGoFiles,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, strings.TrimSpace(errb.String()))
	}
	os.Stderr.Write(errb.Bytes()) // warnings such as "matched no packages"
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func test(args []string) int {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(os.Stderr, testUsage)
			return 2
		}
		if a == "-args" || a == "--args" {
			break
		}
	}
	c, err := parseTestArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk test: %v\n%s", err, testUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := runTests(ctx, c, os.Stdout, os.Stderr)
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "yolk: interrupted")
		return 130
	}
	return code
}

// runTests tests every package c names and returns the exit status.
func runTests(ctx context.Context, c *testConfig, stdout, stderr io.Writer) int {
	// As go test: no patterns means the package in the current directory,
	// and then, or with -bench, the output streams.
	stream := c.verbose || c.bench || len(c.patterns) == 0
	patterns := c.patterns
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	pkgs, err := listPackages(ctx, c.arch, patterns)
	if err != nil {
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		return 1
	}
	var goroot string
	if out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	tmp, err := os.MkdirTemp("", "yolk-test-")
	if err != nil {
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	var (
		qemuBin string
		choice  *qemu.AccelChoice
	)
	failed := false
	// go test reports the packages it cannot load first.
	for _, p := range pkgs {
		if p.Error != nil {
			fmt.Fprintf(stderr, "# %s\n%s\n", p.ImportPath, strings.TrimSpace(p.Error.Err))
			fmt.Fprintf(stdout, "FAIL\t%s [setup failed]\n", p.ImportPath)
			failed = true
		}
	}
	for i, p := range pkgs {
		if ctx.Err() != nil {
			return 130
		}
		if p.Error != nil {
			continue
		}
		if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
			fmt.Fprintf(stdout, "?   \t%s\t[no test files]\n", p.ImportPath)
			continue
		}
		img := filepath.Join(tmp, fmt.Sprintf("%d-%s.test.elf", i, p.Name))
		var buildLog bytes.Buffer
		_, err := image.BuildTest(ctx, image.TestPackage{ImportPath: p.ImportPath, Dir: p.Dir, Name: p.Name, Standard: p.Standard},
			image.Options{Output: img, Arch: c.arch, Stderr: &buildLog})
		if err != nil {
			stderr.Write(buildLog.Bytes())
			if be := (*image.BuildError)(nil); errors.As(err, &be) {
				fmt.Fprintf(stdout, "FAIL\t%s [build failed]\n", p.ImportPath)
			} else {
				fmt.Fprintf(stderr, "yolk test: %v\n", err)
				fmt.Fprintf(stdout, "FAIL\t%s [setup failed]\n", p.ImportPath)
			}
			failed = true
			continue
		}
		if choice == nil {
			if qemuBin, err = qemu.FindQEMUFor(c.arch); err != nil {
				fmt.Fprintf(stderr, "yolk: %v\n", err)
				return 127
			}
			ch, err := qemu.ChooseAccel(ctx, qemu.AccelOptions{Mode: c.accel, Arch: c.arch, Machine: c.machine, QEMU: qemuBin})
			if err != nil {
				fmt.Fprintf(stderr, "yolk: %v\n", err)
				return 2
			}
			choice = &ch
			fmt.Fprintln(stderr, ch)
		}
		initrd := filepath.Join(tmp, fmt.Sprintf("%d-%s.tar", i, p.Name))
		if err := writePackageTree(p.Dir, goroot, initrd); err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			fmt.Fprintf(stdout, "FAIL\t%s [setup failed]\n", p.ImportPath)
			failed = true
			continue
		}
		if !runTestImage(ctx, c, qemuBin, choice.Accel, p.ImportPath, p.Dir, img, initrd, stream, stdout) {
			failed = true
		}
		os.Remove(img)
		os.Remove(initrd)
	}
	if failed {
		fmt.Fprintln(stdout, "FAIL")
		return 1
	}
	return 0
}

// writePackageTree writes the boot archive a test binary gets, as go test
// gives it on the host: the package directory at its own path (read-only in
// the guest, and its working directory), with its files and its testdata
// tree (its other subdirectories, which are other packages, only as empty
// directories: a listing of the package directory sees them), and
// $GOROOT/lib/time/zoneinfo.zip for the time zone tests.
func writePackageTree(dir, goroot, name string) error {
	t := qemu.NewTree()
	if err := t.AddDir(dir, filepath.ToSlash(dir), false); err != nil {
		return fmt.Errorf("boot archive of %s: %v", dir, err)
	}
	td := filepath.Join(dir, "testdata")
	if st, err := os.Stat(td); err == nil && st.IsDir() {
		if err := t.AddDir(td, filepath.ToSlash(td), true); err != nil {
			return fmt.Errorf("boot archive of %s: %v", td, err)
		}
	}
	zi := filepath.Join(goroot, "lib", "time", "zoneinfo.zip")
	if _, err := os.Stat(zi); goroot != "" && err == nil {
		if err := t.AddFile(zi, filepath.ToSlash(zi)); err != nil {
			return fmt.Errorf("boot archive: %v", err)
		}
	}
	return t.WriteFile(name)
}

// killAfter is how long after the test binary's own -timeout QEMU is killed
// (go test's rule for a test binary).
const killAfter = time.Minute

// runTestImage boots one test image, prints its result line (and its
// output when it failed or stream is set) and reports whether it passed.
func runTestImage(ctx context.Context, c *testConfig, qemuBin, accel, pkg, dir, img, initrd string, stream bool, stdout io.Writer) bool {
	var out bytes.Buffer
	w := io.Writer(&out)
	if stream {
		w = io.MultiWriter(stdout, &out)
	}
	kill := time.Duration(0)
	if c.timeout > 0 {
		kill = c.timeout + killAfter
	}
	res, err := qemu.Run(ctx, qemu.Config{
		QEMU:    qemuBin,
		Image:   img,
		Arch:    c.arch,
		Machine: c.machine,
		Accel:   accel,
		Memory:  c.mem,
		SMP:     c.smp,
		Timeout: kill,
		Env:     testNetEnv(append(slices.Clip(c.env), "yolk.cwd="+filepath.ToSlash(dir))),
		Args:    c.testArgs,
		Initrd:  initrd,
		Net:     qemu.NetUser, // a NIC on QEMU's user network, no forwards
		Stdout:  w,
		Stderr:  w,
	})
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(stdout, "yolk: %v\nFAIL\t%s\t[setup failed]\n", err, pkg)
		}
		return false
	}
	elapsed := fmt.Sprintf("%.3fs", res.Elapsed.Seconds())
	if res.ExitCode == 0 {
		note := ""
		if bytes.Contains(out.Bytes(), []byte("testing: warning: no tests to run")) {
			note = " [no tests to run]"
		}
		fmt.Fprintf(stdout, "ok  \t%s\t%s%s\n", pkg, elapsed, note)
		return true
	}
	if !stream {
		stdout.Write(out.Bytes())
	}
	for _, line := range failureNotes(res, kill, hasProgramOutput(out.Bytes())) {
		fmt.Fprintln(stdout, line)
	}
	for _, line := range hints(res) {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "FAIL\t%s\t%s\n", pkg, elapsed)
	return false
}

// hasProgramOutput reports whether the serial output holds a line that is
// not the kernel's ("yolk: ...").
func hasProgramOutput(out []byte) bool {
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, "yolk: ") {
			return true
		}
	}
	return false
}

// failureNotes are the lines printed after a failed test binary's output,
// saying why it failed: "exit status N" when the program printed nothing
// (go test's rule), and for the statuses that are not the program's own,
// yolk's reason.
func failureNotes(res *qemu.Result, kill time.Duration, programOutput bool) []string {
	var notes []string
	switch res.ExitCode {
	case qemu.ExitTimeout:
		notes = append(notes, fmt.Sprintf("*** Test killed: ran too long (%v): QEMU stopped a minute after the test binary's -timeout.", kill))
	case 125:
		notes = append(notes, "yolk: the kernel reported a fault (exit status 125)")
	case qemu.ExitReset, qemu.ExitQEMU:
	default:
		if !programOutput {
			notes = append(notes, fmt.Sprintf("exit status %d", res.ExitCode))
		}
	}
	for _, m := range res.Messages {
		if !strings.HasPrefix(m, "yolk: timeout after") {
			notes = append(notes, m)
		}
	}
	return notes
}

// hints name what the kernel lacks when a failure looks like it: a guest
// killed at the timeout.
func hints(res *qemu.Result) []string {
	var h []string
	if res.ExitCode == qemu.ExitTimeout {
		h = append(h, "yolk: the test binary's own -timeout did not end it: the guest stopped making progress "+
			"(a kernel hang or livelock); -e yolk.strace=1 shows the last system calls")
	}
	return h
}

// testNetEnv gives a test boot the user network's address without its
// DNS server (qemu.TestNetConf), unless -e yolk.net=... gave one.
func testNetEnv(env []string) []string {
	if slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "yolk.net=") }) {
		return env
	}
	return append(env, qemu.TestNetConf)
}
