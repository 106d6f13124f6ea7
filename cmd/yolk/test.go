package main

import (
	"bytes"
	"cmp"
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
	"strings"
	"sync"
	"syscall"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
)

const testUsage = `usage: yolk test [flags] [packages] [-args test binary arguments]

Builds each package's test binary with the kernel linked in, boots it in
QEMU and prints "ok", "FAIL" and "?" lines as go test does; exits 1 if any
package failed. Packages are go test's patterns (./..., ./sync/ces, strings).
Flags are go test's (the README has the table of what each does here):
  to the test binary: -run -skip -bench -benchtime -benchmem -count -cpu -failfast
    -fullpath -list -parallel -short -shuffle -timeout (default 10m) -v
    -fuzztime -fuzzminimizetime -memprofilerate -blockprofilerate -mutexprofilefraction
  to the build: -a -asmflags -buildvcs -compiler gc -cover -covermode -coverpkg -gcflags
    -installsuffix -ldflags -mod -modcacherw -modfile -pgo -pkgdir -tags -toolexec
    -trimpath -work -x -debug-actiongraph -debug-runtime-trace -debug-trace
  yolk test's own: -C dir (first: run there), -c (write NAME.test, the bootable image, and do not boot it),
    -o file|dir, -json (go tool test2json over the guest's output), -p N (packages
    built and booted at once; default GOMAXPROCS), -vet list|off|all (go vet on the
    host before the boot, go test's analyzers by default)
  output files, on the host where go test writes them (through a host share at
    /yolk/out): -coverprofile -cpuprofile -memprofile -blockprofile -mutexprofile
    -trace -outputdir dir (default: the working directory) -artifacts; the profiles
    take one package and keep the image as NAME.test for go tool pprof
  refused with the reason: -race -msan -asan -fuzz -exec -n -buildmode -linkshared
    -gccgoflags -overlay
Guest flags:
  -arch amd64|arm64 (default $GOARCH if one of them, else amd64),
  -accel auto|kvm|tcg, -machine microvm|pc|q35 (amd64) or virt|virt-gicv3 (arm64),
  -m 4G, -smp 1, -e KEY=VALUE (repeatable),
  -disk FILE[,if=virtio|nvme][,ro][:GUESTPATH] (repeatable: /dev/vda ... as yolk run's)

The guest sees the package's module and $GOROOT read-only at their own
paths (host shares; the boot archive, nearest files first up to a budget,
when the output files take the shares), the package directory as its
working directory, and GOROOT set. QEMU is killed a minute after -timeout,
as go test kills a test binary.
`

// listedPackage is what yolk test reads from go list -json.
type listedPackage struct {
	ImportPath   string
	Dir          string
	Name         string
	Standard     bool
	TestGoFiles  []string
	XTestGoFiles []string
	Module       *struct {
		Path string
		Dir  string
	}
	Error *struct{ Err string }
}

// listPackages resolves go test patterns with go list, for the guest's
// GOOS and GOARCH (arch) and the build flags given, so that a package's
// arch-specific and tagged test files count. Packages that cannot be
// loaded come back with Error set.
func listPackages(ctx context.Context, arch string, flags, patterns []string) ([]listedPackage, error) {
	args := []string{"list", "-e", "-json=ImportPath,Dir,Name,Standard,TestGoFiles,XTestGoFiles,Module,Error"}
	for _, f := range flags {
		if name, _, _ := strings.Cut(f, "="); name == "-tags" || name == "-mod" || name == "-modfile" {
			args = append(args, f)
		}
	}
	args = append(args, patterns...)
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
		fmt.Fprintf(os.Stderr, "yolk test: %v\n", err)
		return 2
	}
	if c.chdir != "" {
		if err := os.Chdir(c.chdir); err != nil {
			fmt.Fprintf(os.Stderr, "yolk test: -C: %v\n", err)
			return 2
		}
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

// tester holds what every package's run shares.
type tester struct {
	c      *testConfig
	tmp    string
	goroot string
	main   string // the main module's directory, "" outside a module
	outDir string // where the output files go (-outputdir), absolute
	cover  *coverProfile
	meta   *coverMeta // -coverpkg's meta-data (testcover.go), nil without
	many   bool       // more than one package
	stream bool       // print the test binary's output as go test does in package-list mode with -v

	accelOnce sync.Once
	qemuBin   string
	accel     string
	accelErr  error
	accelCode int
	stderr    io.Writer // yolk's own notes (the accelerator line)
}

// runTests tests every package c names and returns the exit status.
func runTests(ctx context.Context, c *testConfig, stdout, stderr io.Writer) int {
	// As go test: no patterns means the package in the current directory,
	// and then, or with -v, -bench or -list, the output streams.
	patterns := c.patterns
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	pkgs, err := listPackages(ctx, c.arch, c.buildFlags, patterns)
	if err != nil {
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		return 1
	}
	if f := c.profileFlag(); f != "" && len(pkgs) != 1 {
		fmt.Fprintf(stderr, "cannot use -%s flag with multiple packages\n", f)
		return 1
	}
	if c.output != "" && len(pkgs) > 1 {
		if _, err := c.imagePath("x", true); err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			return 2
		}
	}
	t := &tester{c: c, many: len(pkgs) > 1, stream: c.verbose || c.bench || c.list || len(c.patterns) == 0, stderr: stderr}
	if out, err := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOMOD").Output(); err == nil {
		f := strings.Split(string(out), "\n")
		t.goroot = strings.TrimSpace(f[0])
		if len(f) > 1 && strings.HasSuffix(strings.TrimSpace(f[1]), ".mod") {
			t.main = filepath.Dir(strings.TrimSpace(f[1]))
		}
	}
	if t.tmp, err = os.MkdirTemp("", "yolk-test-"); err != nil {
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		return 1
	}
	defer os.RemoveAll(t.tmp)
	if t.outDir, err = filepath.Abs(cmp.Or(c.outputDir, ".")); err != nil {
		fmt.Fprintf(stderr, "yolk test: -outputdir: %v\n", err)
		return 1
	}
	if c.files["coverprofile"] != "" && !c.compile {
		if err := t.createCoverProfile(); err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			return 1
		}
		defer t.cover.f.Close()
	}

	if c.coverPkg != "" && !c.compile {
		if err := t.buildCoverMeta(ctx, pkgs, filepath.Join(t.tmp, "meta"), stderr); err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			return 1
		}
	}

	failed := false
	// go test reports the packages it cannot load first.
	for _, p := range pkgs {
		if p.Error != nil {
			t.loadError(p, stdout, stderr)
			failed = true
		}
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.procs == 1 || len(pkgs) == 1 {
		for i, p := range pkgs {
			if parent.Err() != nil {
				return 130
			}
			if p.Error != nil {
				continue
			}
			if code, o := t.runPackage(ctx, i, p, stdout, stderr); code != 0 {
				return code
			} else if o != passed {
				failed = true
				if o == testFailed && c.failfast {
					break // go test starts no other package after a test binary failed
				}
			}
		}
	} else {
		f, code := t.parallel(ctx, cancel, pkgs, stdout, stderr)
		if code != 0 {
			return code
		}
		failed = failed || f
	}
	if parent.Err() != nil {
		return 130
	}
	if failed {
		if !c.json { // go test -json ends with the events
			fmt.Fprintln(stdout, "FAIL")
		}
		return 1
	}
	return 0
}

// parallel runs up to -p packages at once, each into its own buffers,
// and prints them in package order; it reports whether one failed, and
// the exit status when yolk test cannot go on.
func (t *tester) parallel(ctx context.Context, cancel func(), pkgs []listedPackage, stdout, stderr io.Writer) (bool, int) {
	type result struct {
		out, errb bytes.Buffer
		o         outcome
		code      int
		done      chan struct{}
	}
	res := make([]*result, len(pkgs))
	sem := make(chan struct{}, t.c.procs)
	for i, p := range pkgs {
		r := &result{done: make(chan struct{})}
		res[i] = r
		go func() {
			defer close(r.done)
			if p.Error != nil {
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			r.code, r.o = t.runPackage(ctx, i, p, &r.out, &r.errb)
		}()
	}
	failed, stop, code := false, false, 0
	for _, r := range res {
		<-r.done
		if stop {
			continue
		}
		stderr.Write(r.errb.Bytes())
		stdout.Write(r.out.Bytes())
		if r.code != 0 {
			code, stop = r.code, true
			cancel()
			continue
		}
		if r.o != passed {
			failed = true
		}
		if r.o == testFailed && t.c.failfast {
			stop = true
			cancel()
		}
	}
	return failed, code
}

// loadError reports a package go list could not load, as go test does.
func (t *tester) loadError(p listedPackage, stdout, stderr io.Writer) {
	msg := strings.TrimSpace(p.Error.Err)
	if !t.c.json {
		fmt.Fprintf(stderr, "# %s\n%s\n", p.ImportPath, msg)
		fmt.Fprintf(stdout, "FAIL\t%s [setup failed]\n", p.ImportPath)
		return
	}
	writeBuildEvents(stdout, p.ImportPath, "# "+p.ImportPath+"\n"+msg+"\n")
	writeFailEvents(stdout, p.ImportPath, "FAIL\t"+p.ImportPath+" [setup failed]\n", p.ImportPath)
}

// chooseAccel finds QEMU and the accelerator once, for the first image
// that boots.
func (t *tester) chooseAccel(ctx context.Context) error {
	t.accelOnce.Do(func() {
		if t.qemuBin, t.accelErr = qemu.FindQEMUFor(t.c.arch); t.accelErr != nil {
			t.accelCode = 127
			return
		}
		ch, err := qemu.ChooseAccel(ctx, qemu.AccelOptions{Mode: t.c.accel, Arch: t.c.arch, Machine: t.c.machine, QEMU: t.qemuBin})
		if err != nil {
			t.accelErr, t.accelCode = err, 2
			return
		}
		t.accel = ch.Accel
		fmt.Fprintln(t.stderr, ch)
	})
	return t.accelErr
}

// outcome is how a package's test went.
type outcome int

const (
	passed     outcome = iota
	failed             // before its test binary ran: build, vet, setup
	testFailed         // its test binary failed (what stops later packages under -failfast)
)

// runPackage vets, builds and boots package p's tests, writing what go
// test writes for it to stdout and stderr. It returns a non-zero exit
// status when yolk test cannot go on (no QEMU), and how p went.
func (t *tester) runPackage(ctx context.Context, i int, p listedPackage, stdout, stderr io.Writer) (int, outcome) {
	c := t.c
	// With -json the test binary's output, and go test's lines about it,
	// go through go tool test2json; a failed build's events are written
	// here (they name the failed build, which test2json cannot be told).
	out := stdout
	if c.json {
		conv := &lazyTest2JSON{ctx: ctx, pkg: p.ImportPath, w: stdout}
		defer conv.Close()
		out = conv
	}
	if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
		// Under -coverpkg, a selected package has a coverage line
		// instead (testcover.go).
		if line, ok, err := t.noTestCoverage(ctx, i, p); err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			fmt.Fprintf(out, "FAIL\t%s [setup failed]\n", p.ImportPath)
			return 0, failed
		} else if ok {
			fmt.Fprint(out, line)
			return 0, passed
		}
		fmt.Fprintf(out, "?   \t%s\t[no test files]\n", p.ImportPath)
		return 0, passed
	}
	testID := fmt.Sprintf("%s [%s.test]", p.ImportPath, p.ImportPath)
	buildFailed := func(log []byte) (int, outcome) {
		if c.json {
			writeBuildEvents(stdout, testID, string(log))
			writeFailEvents(stdout, p.ImportPath, "FAIL\t"+p.ImportPath+" [build failed]\n", testID)
			return 0, failed
		}
		stderr.Write(log)
		fmt.Fprintf(out, "FAIL\t%s [build failed]\n", p.ImportPath)
		return 0, failed
	}
	img, err := c.imagePath(p.Name, t.many)
	if err != nil {
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		return 0, failed
	}
	keep := img != ""
	if !keep {
		img = filepath.Join(t.tmp, fmt.Sprintf("%d-%s.test.elf", i, p.Name))
	}
	tp := image.TestPackage{ImportPath: p.ImportPath, Dir: p.Dir, Name: p.Name, Standard: p.Standard, Main: t.main}
	if p.Module != nil {
		tp.Module, tp.ModuleDir = p.Module.Path, p.Module.Dir
	}
	var buildLog bytes.Buffer
	_, err = image.BuildTest(ctx, tp, image.Options{Output: img, Arch: c.arch, Tags: c.tags, LDFlags: c.ldflags, Flags: c.buildFlags, Stderr: &buildLog})
	if err != nil {
		if be := (*image.BuildError)(nil); errors.As(err, &be) {
			return buildFailed(buildLog.Bytes())
		}
		stderr.Write(buildLog.Bytes())
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		fmt.Fprintf(out, "FAIL\t%s [setup failed]\n", p.ImportPath)
		return 0, failed
	}
	log := buildLog.Bytes() // -x, -work
	if t.meta != nil {
		// go test's -coverpkg warnings came from the host build.
		log = dropLines(log, coverPkgWarning)
	}
	stderr.Write(log)
	// go test vets a package whose test binary built, before it runs it.
	if !c.vetOff {
		if log, err := vet(ctx, c, p); err != nil {
			if ctx.Err() != nil {
				return 0, failed
			}
			return buildFailed(log)
		}
	}
	if c.compile {
		return 0, passed
	}
	if !keep {
		defer os.Remove(img)
	}
	if err := t.chooseAccel(ctx); err != nil {
		fmt.Fprintf(stderr, "yolk: %v\n", err)
		return t.accelCode, failed
	}
	recount := t.recounts(p.ImportPath)
	shares, outArgs, coverDir, err := t.outputs(i, recount)
	if err != nil {
		fmt.Fprintf(stderr, "yolk test: %v\n", err)
		fmt.Fprintf(out, "FAIL\t%s [setup failed]\n", p.ImportPath)
		return 0, failed
	}
	// The module and GOROOT: host shares, or the boot archive when
	// they do not fit beside the output files' (testfiles.go).
	initrd := ""
	if fs := testShares(p, t.goroot); fs != nil && len(fs)+len(shares) <= qemu.MaxShares {
		shares = append(fs, shares...)
	} else {
		initrd = filepath.Join(t.tmp, fmt.Sprintf("%d-%s.tar", i, p.Name))
		note, err := writePackageTree(p, t.goroot, initrd)
		if err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			fmt.Fprintf(out, "FAIL\t%s [setup failed]\n", p.ImportPath)
			return 0, failed
		}
		defer os.Remove(initrd)
		fmt.Fprintf(stderr, "yolk: the module and GOROOT in the boot archive, not shared (%d shares for the output files)\n", len(shares))
		if note != "" {
			fmt.Fprintf(stderr, "yolk: %s\n", note)
		}
	}
	env := append(slices.Clip(c.env), "yolk.cwd="+filepath.ToSlash(p.Dir))
	if t.goroot != "" && !slices.ContainsFunc(c.env, func(e string) bool { return strings.HasPrefix(e, "GOROOT=") }) {
		env = append(env, "GOROOT="+t.goroot) // as go test's environment has it
	}
	var fix func(string) string
	var rc *coverRecount
	if recount {
		rc = &coverRecount{ctx: ctx, t: t, dir: coverDir}
		fix = rc.line
	}
	ok := runTestImage(ctx, c, t.qemuBin, t.accel, p.ImportPath, env, img, initrd, shares, outArgs, t.stream || c.json, fix, out)
	if rc != nil && rc.err != nil {
		fmt.Fprintf(stderr, "yolk test: -coverpkg: %v\n", rc.err)
		return 0, failed
	}
	if t.cover != nil && coverDir != "" {
		prof := filepath.Join(coverDir, "_cover_.out")
		if rc != nil && rc.prof != "" {
			prof = rc.prof
		}
		if err := t.cover.mergeFile(prof); err != nil {
			fmt.Fprintf(stderr, "yolk test: %v\n", err)
			return 0, failed
		}
	}
	if !ok {
		return 0, testFailed
	}
	return 0, passed
}

// vet runs go vet with -vet's analyzers on p for the guest's GOOS and
// GOARCH, as go test does before it runs a test binary; it returns vet's
// output when vet fails.
func vet(ctx context.Context, c *testConfig, p listedPackage) ([]byte, error) {
	args := append([]string{"vet"}, c.vet...)
	for _, f := range c.buildFlags {
		if name, _, _ := strings.Cut(f, "="); name == "-tags" || name == "-mod" || name == "-modfile" {
			args = append(args, f)
		}
	}
	args = append(args, p.ImportPath)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+c.arch, "CGO_ENABLED=0")
	return cmd.CombinedOutput()
}

// killAfter is how long after the test binary's own -timeout QEMU is killed
// (go test's rule for a test binary).
const killAfter = time.Minute

// runTestImage boots one test image, prints its result line (and its
// output when it failed or stream is set) and reports whether it passed.
// shares and args are the output files' host shares and the test
// binary's arguments for them (testout.go); fix, if not nil, rewrites
// the binary's coverage line (testcover.go).
func runTestImage(ctx context.Context, c *testConfig, qemuBin, accel, pkg string, env []string, img, initrd string, shares []qemu.Share, args []string, stream bool, fix func(string) string, stdout io.Writer) bool {
	var out bytes.Buffer
	w := io.Writer(&out)
	if stream {
		sw := stdout
		if c.json {
			f := &bootNoteFilter{w: stdout}
			defer f.Flush()
			sw = f
		}
		w = io.MultiWriter(sw, &out)
	}
	var cw *coverLineWriter
	if fix != nil {
		cw = &coverLineWriter{w: w, fix: fix}
		w = cw
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
		Env:     testNetEnv(env),
		Args:    append(slices.Clip(args), c.testArgs...),
		Shares:  shares,
		Disks:   c.disks,
		Initrd:  initrd,
		Net:     qemu.NetUser, // a NIC on QEMU's user network, no forwards
		Stdout:  w,
		Stderr:  w,
	})
	if cw != nil {
		cw.Flush()
	}
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
		if len(out.Bytes()) > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) && stream {
			fmt.Fprintln(stdout) // go test's rule: the ok line starts a line
		}
		cov := ""
		if !c.bench && len(c.patterns) > 0 {
			// go test's rule: the coverage goes on the ok line unless
			// the output streamed (-bench, or no package named).
			cov = coverage(c, out.Bytes())
		}
		fmt.Fprintf(stdout, "ok  \t%s\t%s%s%s\n", pkg, elapsed, cov, note)
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
