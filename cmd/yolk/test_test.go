package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"yolk/qemu"
)

// runIn runs a command in dir and returns its stdout, stderr and exit status.
func runIn(t *testing.T, dir, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return o.String(), e.String(), code
}

var (
	resultLine = regexp.MustCompile(`^(ok  |FAIL|\?   )\t|^FAIL$`)
	duration   = regexp.MustCompile(`\t[0-9]+\.[0-9]+s|\t\(cached\)`)
)

// resultLines returns go test's per-package result lines (and the final
// "FAIL") of out, with durations replaced by "<t>".
func resultLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if resultLine.MatchString(l) {
			lines = append(lines, duration.ReplaceAllString(l, "\t<t>"))
		}
	}
	return lines
}

// yolk test against go test on the host, on the fixture packages in
// testdata/yolktest: one that passes (with -short, -v and a -run that
// matches nothing; it runs in its package directory and reads its
// testdata), one that fails, one that panics, one that blocks past
// -timeout, one without test files, one that does not compile, one that
// fails go test's vet, and a pattern that names no package. The result
// lines and the exit status are go test's; the guest's output holds the
// failure, the panic and the timeout panic. Then go test's other flags, one
// boot per package and flag set: -json event for event (times aside) with
// -shuffle at a fixed seed (the same order), -failfast (one failure, later
// packages not run) and -cover (on the ok line), -list's lines, -bench with
// -benchmem's columns (and -cover's line in the streamed output), and -c's
// images. Boots under the accelerator from
// $YOLK_ACCEL (as TestGuest); needs QEMU.
func TestYolkTestMatchesGoTest(t *testing.T) {
	if _, err := qemu.FindQEMU(); err != nil {
		t.Fatal(err)
	}
	accel := os.Getenv("YOLK_ACCEL")
	if accel == "" {
		accel = "auto"
	}
	yolk := buildYolk(t)
	dir := filepath.Join("testdata", "yolktest")
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		want    []string // in yolk test's stdout
		not     []string // not in it
		compare func(t *testing.T, yolk, gotest string)
	}{
		{"pass", []string{"./pass"}, 0, nil, []string{"TestAdd"}, nil},
		{"pass-v-short", []string{"-v", "-short", "./pass"}, 0,
			[]string{"=== RUN   TestAdd", "pass_test.go:13: added", "--- SKIP: TestShort", "pass_test.go:35: read testdata", "--- PASS: TestPackageDir", "PASS\n"}, nil, nil},
		{"no-tests-to-run", []string{"-run", "^$", "./pass"}, 0, nil, nil, nil},
		// A 2 GiB value, as a database's suite holds: the guest's
		// memory (testMemory) takes it as the host does.
		{"bigalloc", []string{"./bigalloc"}, 0, nil, nil, nil},
		{"mixed", []string{"-p=3", "-timeout", "5s", "./pass", "./fail", "./panic", "./timeout", "./notest", "./buildfail", "./vetfail", "./nosuch"}, 1,
			[]string{"fail_test.go:9: expected failure", "panic: boom", "panic: test timed out after 5s", "TestBlocks"},
			[]string{"TestAdd"}, nil},
		{"bad-pattern", []string{"./nosuch/..."}, 1, nil, nil, nil},
		{"args", []string{"-v", "./pass", "-args", "-test.run=TestShort"}, 0, []string{"--- PASS: TestShort"}, []string{"TestAdd"}, nil},
		// -p=1: with packages side by side, go test may start ./pass
		// before ./failfast has failed (it did, on a quiet host).
		{"json-shuffle-failfast-cover", []string{"-p=1", "-json", "-cover", "-shuffle=42", "-failfast", "./notest", "./vetfail", "./buildfail", "./flags", "./failfast", "./pass"}, 1,
			[]string{`"Output":"-test.shuffle 42\n"`, `\tcoverage: 80.0% of statements\n"`}, []string{`"Package":"yolk/cmd/yolk/testdata/yolktest/pass"`, "yolk: boot"}, compareJSON},
		{"list", []string{"-list", ".", "./flags"}, 0, []string{"TestFive\n", "BenchmarkAlloc\n", "ExampleSum\n"}, nil, compareLines},
		{"bench-benchmem-cover", []string{"-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "100000x", "-cover", "./flags"}, 0,
			[]string{"B/op", "allocs/op", "coverage: 80.0% of statements\n"}, nil, compareBench},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			ys, ye, ycode := runIn(t, dir, yolk, append([]string{"test", "-accel", accel}, c.args...)...)
			elapsed := time.Since(start)
			gs, ge, gcode := runIn(t, dir, "go", append([]string{"test", "-count=1"}, c.args...)...)
			if ycode != c.code || gcode != c.code {
				t.Errorf("exit status: yolk test %d, go test %d, want %d", ycode, gcode, c.code)
			}
			if y, g := resultLines(ys), resultLines(gs); !slices.Equal(y, g) {
				t.Errorf("result lines differ:\nyolk test:\n%s\ngo test:\n%s", strings.Join(y, "\n"), strings.Join(g, "\n"))
			}
			for _, w := range c.want {
				if !strings.Contains(ys, w) {
					t.Errorf("yolk test output lacks %q", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(ys, w) {
					t.Errorf("yolk test output has %q", w)
				}
			}
			if c.compare != nil {
				c.compare(t, ys, gs)
			}
			t.Logf("yolk test %s: %v", strings.Join(c.args, " "), elapsed.Round(time.Millisecond))
			if t.Failed() {
				t.Logf("yolk test stdout:\n%s\nstderr:\n%s\ngo test stdout:\n%s\nstderr:\n%s", ys, ye, gs, ge)
			}
		})
	}
	// -c writes each package's bootable test image, NAME.test, into the
	// -o directory and boots nothing; a package without tests gets none.
	t.Run("c", func(t *testing.T) {
		out := t.TempDir()
		ys, ye, code := runIn(t, dir, yolk, "test", "-c", "-o", out+"/", "./pass", "./notest")
		if code != 0 || strings.Contains(ye, "accel") {
			t.Errorf("status %d\n%s\n%s", code, ys, ye)
		}
		if arch, err := qemu.ImageArch(filepath.Join(out, "pass.test")); err != nil || arch != "amd64" && arch != "arm64" {
			t.Errorf("pass.test: %s, %v", arch, err)
		}
		if _, err := os.Stat(filepath.Join(out, "notest.test")); err == nil {
			t.Error("notest.test written for a package without tests")
		}
	})
	t.Run("output-files", func(t *testing.T) { testOutputFiles(t, yolk, accel, dir) })
	t.Run("coverpkg-untested", func(t *testing.T) { testCoverUntested(t, yolk, accel, dir) })
	t.Run("coverpkg-several", func(t *testing.T) { testCoverSeveral(t, yolk, accel, dir) })
	t.Run("coverprofile", func(t *testing.T) {
		testCoverProfile(t, yolk, accel, dir, "-covermode=set", "yolk/qemu/report", "path", "encoding/hex")
	})
}

// testCoverProfile: -coverprofile over several packages (here one of
// ours, a parser that reads its testdata through the module's share, and
// two standard ones) is the host's go test profile block for block, and
// the result lines (with the coverage) are go test's.
func testCoverProfile(t *testing.T, yolk, accel, dir string, args ...string) {
	_, _, _, g := testCoverPkg(t, yolk, accel, dir, args...)
	if len(g) < 10 || g[len(g)-1] == "" {
		t.Errorf("go test's profile has too few blocks to compare: %q", g)
	}
}

// testCoverUntested: under -coverpkg, a selected package without test
// files gets go test's coverage line and its blocks in the profile, and
// the tested package's line counts its statements too (go test's
// metafiles.txt): the result lines and the profile are go test's.
func testCoverUntested(t *testing.T, yolk, accel, dir string) {
	ys, gs, yout, gout := testCoverPkg(t, yolk, accel, dir, "-covermode=set", "-coverpkg=./untested,./pass", "./untested", "./pass")
	line := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "/untested") {
				return l
			}
		}
		return ""
	}
	if !strings.Contains(line(gs), "coverage: 0.0% of statements") || line(ys) != line(gs) {
		t.Errorf("untested's line: yolk test %q, go test %q", line(ys), line(gs))
	}
	blocks := func(l []string) []string {
		return slices.DeleteFunc(slices.Clone(l), func(s string) bool { return !strings.Contains(s, "/untested/") })
	}
	if y, g := blocks(yout), blocks(gout); len(g) == 0 || !slices.Equal(y, g) {
		t.Errorf("untested's blocks: yolk test %q, go test %q", y, g)
	}
}

// testCoverSeveral: -coverpkg over two tested packages, covuse calling
// covlib: go test counts both in each package's coverage (covlib's
// binary does not link covuse in; its statements count as not run) and
// its profile has both packages' blocks from each binary. With -v the
// streamed coverage lines, the ok lines and the profile are go test's.
func testCoverSeveral(t *testing.T, yolk, accel, dir string) {
	ys, gs, _, _ := testCoverPkg(t, yolk, accel, dir, "-v", "-covermode=set", "-coverpkg=./covlib,./covuse", "./covlib", "./covuse")
	covLines := func(out string) []string {
		var l []string
		for _, s := range strings.Split(out, "\n") {
			if strings.HasPrefix(s, "coverage: ") {
				l = append(l, s)
			}
		}
		return l
	}
	y, g := covLines(ys), covLines(gs)
	if !slices.Equal(y, g) || len(g) != 2 {
		t.Errorf("streamed coverage lines: yolk test %q, go test %q", y, g)
	}
	// Not the numbers of each binary alone (covlib's: 28.6%).
	if len(g) > 0 && g[0] != "coverage: 18.2% of statements in ./covlib, ./covuse" {
		t.Errorf("go test's covlib line %q: the fixture changed", g[0])
	}
}

// testCoverPkg runs yolk test and go test with -coverprofile and args,
// fails unless both pass with the same result lines, the same -coverpkg
// warnings (none, or some) and the same profile, block for block, and
// returns their stdout and sorted profiles.
func testCoverPkg(t *testing.T, yolk, accel, dir string, args ...string) (ys, gs string, yprof, gprof []string) {
	yout, gout := filepath.Join(t.TempDir(), "cover.out"), filepath.Join(t.TempDir(), "cover.out")
	start := time.Now()
	ys, ye, ycode := runIn(t, dir, yolk, append([]string{"test", "-accel", accel, "-coverprofile=" + yout}, args...)...)
	t.Logf("yolk test -coverprofile %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	gs, ge, gcode := runIn(t, dir, "go", append([]string{"test", "-count=1", "-coverprofile=" + gout}, args...)...)
	if ycode != 0 || gcode != 0 || !slices.Equal(resultLines(ys), resultLines(gs)) {
		t.Fatalf("yolk test: status %d\n%s%s\ngo test: status %d\n%s%s", ycode, ys, ye, gcode, gs, ge)
	}
	if strings.Contains(ye, "warning:") != strings.Contains(ge, "warning:") {
		t.Errorf("warnings differ:\nyolk test:\n%s\ngo test:\n%s", ye, ge)
	}
	sortedLines := func(name string) []string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		l := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(l)
		return l
	}
	yprof, gprof = sortedLines(yout), sortedLines(gout)
	if !slices.Equal(yprof, gprof) {
		t.Errorf("coverage profiles differ (%d lines, go test's %d):\n%s", len(yprof), len(gprof), lineDiff(yprof, gprof))
	}
	return ys, gs, yprof, gprof
}

// lineDiff lists the lines only in a ("-") and only in b ("+"), both sorted.
func lineDiff(a, b []string) string {
	var d []string
	for _, l := range a {
		if _, ok := slices.BinarySearch(b, l); !ok {
			d = append(d, "- "+l)
		}
	}
	for _, l := range b {
		if _, ok := slices.BinarySearch(a, l); !ok {
			d = append(d, "+ "+l)
		}
	}
	return strings.Join(d, "\n")
}

// testOutputFiles: go test's output files, written by the guest through
// the host share, in one boot of the prof fixture: -coverprofile with
// -covermode=set is the host's go test profile block for block;
// -cpuprofile names the hot function (Spin) with at least 80 % of the
// samples (cumulative: with what it calls), and the samples come to Spin's
// 3 s within 20 % (100 Hz, one busy thread; at 1.5 s the runtime's and the
// test framework's own samples came to 23 % under host load); -memprofile and -trace
// parse with go tool pprof and go tool trace; the image is kept as
// prof.test (in -o's directory) for pprof's symbols; -artifacts keeps a
// test's file where go test's does.
func testOutputFiles(t *testing.T, yolk, accel, dir string) {
	yout, gout := t.TempDir(), t.TempDir()
	flags := func(out string) []string {
		return []string{"-o", out + "/", "-outputdir", out, "-coverprofile=cover.out", "-covermode=set",
			"-cpuprofile=cpu.prof", "-memprofile", "mem.prof", "-trace=trace.out", "-artifacts", "./prof"}
	}
	start := time.Now()
	ys, ye, ycode := runIn(t, dir, yolk, append([]string{"test", "-accel", accel}, flags(yout)...)...)
	t.Logf("yolk test: %v", time.Since(start).Round(time.Millisecond))
	gs, ge, gcode := runIn(t, dir, "go", append([]string{"test", "-count=1"}, flags(gout)...)...)
	if ycode != 0 || gcode != 0 || !slices.Equal(resultLines(ys), resultLines(gs)) {
		t.Fatalf("yolk test: status %d\n%s%s\ngo test: status %d\n%s%s", ycode, ys, ye, gcode, gs, ge)
	}
	sortedLines := func(name string) []string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		l := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(l)
		return l
	}
	if y, g := sortedLines(filepath.Join(yout, "cover.out")), sortedLines(filepath.Join(gout, "cover.out")); !slices.Equal(y, g) || !slices.Contains(y, "mode: set") {
		t.Errorf("coverage profiles differ:\nyolk test:\n%s\ngo test:\n%s", strings.Join(y, "\n"), strings.Join(g, "\n"))
	}
	bin := filepath.Join(yout, "prof.test")
	if arch, err := qemu.ImageArch(bin); err != nil {
		t.Errorf("prof.test: %s, %v", arch, err)
	}
	pprof := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"tool", "pprof", "-top"}, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("go tool pprof %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	cpu := pprof(bin, filepath.Join(yout, "cpu.prof"))
	// The cum% column: Spin and what it calls (time.Now, and asyncPreempt
	// when a preemption signal stopped it).
	spin := regexp.MustCompile(`(?m)^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+([0-9.]+)%\s+\S+/prof\.Spin$`).FindStringSubmatch(cpu)
	total := regexp.MustCompile(`Total samples = ([0-9.]+m?s)`).FindStringSubmatch(cpu)
	if spin == nil || total == nil {
		t.Errorf("CPU profile without Spin or its total:\n%s", cpu)
	} else {
		pct, _ := strconv.ParseFloat(spin[1], 64)
		d, _ := time.ParseDuration(total[1])
		if pct < 80 || d < 2400*time.Millisecond || d > 3600*time.Millisecond {
			t.Errorf("CPU profile: Spin %.1f%% of %v of samples; want at least 80%% of 3s ± 20%%:\n%s", pct, d, cpu)
		}
	}
	if mem := pprof("-sample_index=alloc_space", bin, filepath.Join(yout, "mem.prof")); !strings.Contains(mem, "prof.Grow") {
		t.Errorf("memory profile without Grow:\n%s", mem)
	}
	tr, err := exec.Command("go", "tool", "trace", "-d=parsed", filepath.Join(yout, "trace.out")).CombinedOutput()
	if err != nil || !bytes.Contains(tr, []byte(" StateTransition ")) {
		t.Errorf("go tool trace -d=parsed: %v\n%.2000s", err, tr)
	}
	artifacts := func(out string) []string {
		var m []string
		filepath.WalkDir(filepath.Join(out, "_artifacts"), func(f string, d fs.DirEntry, err error) error {
			if err != nil || d.Name() != "note.txt" {
				return err
			}
			if b, err := os.ReadFile(f); err != nil || string(b) != "kept\n" {
				t.Errorf("%s: %q, %v", f, b, err)
			}
			rel, _ := filepath.Rel(out, f)
			m = append(m, filepath.Dir(filepath.Dir(rel))) // without the random directory
			return nil
		})
		return m
	}
	if y, g := artifacts(yout), artifacts(gout); len(g) != 1 || !slices.Equal(y, g) {
		t.Errorf("artifacts: yolk test %q, go test %q", y, g)
	}
}

var (
	durations   = regexp.MustCompile(`[0-9]+\.[0-9]+s\b`)
	nsPerOp     = regexp.MustCompile(`\s+[0-9.]+ ns/op`)
	benchSuffix = regexp.MustCompile(`-[0-9]+\b`) // BenchmarkX-2: GOMAXPROCS differs
)

// jsonEvents returns the test2json and build events of out by package
// (build events by their ImportPath), each without its Time and Elapsed
// and with durations in its output replaced.
func jsonEvents(t *testing.T, out string) map[string][]string {
	t.Helper()
	ev := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not JSON: %q: %v", l, err)
			continue
		}
		delete(m, "Time")
		delete(m, "Elapsed")
		if o, ok := m["Output"].(string); ok {
			m["Output"] = durations.ReplaceAllString(o, "<t>")
		}
		key, _ := m["Package"].(string)
		if key == "" {
			key, _ = m["ImportPath"].(string)
		}
		b, _ := json.Marshal(m) // sorted keys
		ev[key] = append(ev[key], string(b))
	}
	return ev
}

// compareJSON: the same events, package by package, in the same order.
func compareJSON(t *testing.T, yolk, gotest string) {
	y, g := jsonEvents(t, yolk), jsonEvents(t, gotest)
	if len(g) == 0 {
		t.Error("go test -json gave no events")
	}
	for pkg, ge := range g {
		if ye := y[pkg]; !slices.Equal(ye, ge) {
			t.Errorf("%s: events differ:\nyolk test:\n%s\ngo test:\n%s", pkg, strings.Join(ye, "\n"), strings.Join(ge, "\n"))
		}
	}
	for pkg := range y {
		if _, ok := g[pkg]; !ok {
			t.Errorf("yolk test has events for %s, go test none", pkg)
		}
	}
}

// programLines are out's lines without the kernel's notes and with
// durations replaced.
func programLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "yolk: ") {
			lines = append(lines, durations.ReplaceAllString(l, "<t>"))
		}
	}
	return lines
}

// compareLines: the same program output, line for line.
func compareLines(t *testing.T, yolk, gotest string) {
	if y, g := programLines(yolk), programLines(gotest); !slices.Equal(y, g) {
		t.Errorf("output differs:\nyolk test:\n%s\ngo test:\n%s", strings.Join(y, "\n"), strings.Join(g, "\n"))
	}
}

// compareBench: the same benchmark lines but for ns/op (and the -N
// GOMAXPROCS suffix): the name, the iterations, B/op and allocs/op. B/op
// counts the whole process's allocations: the case runs 100000
// iterations, so that a few KiB the runtime or the framework allocate
// meanwhile round away (at 10 iterations the host once showed 596 B/op
// for 64).
func compareBench(t *testing.T, yolk, gotest string) {
	bench := func(out string) []string {
		var b []string
		for _, l := range programLines(out) {
			if strings.HasPrefix(l, "Benchmark") {
				b = append(b, strings.Join(strings.Fields(benchSuffix.ReplaceAllString(nsPerOp.ReplaceAllString(l, ""), "")), " "))
			}
		}
		return b
	}
	if y, g := bench(yolk), bench(gotest); len(g) == 0 || !slices.Equal(y, g) {
		t.Errorf("benchmark lines differ:\nyolk test:\n%s\ngo test:\n%s", strings.Join(y, "\n"), strings.Join(g, "\n"))
	}
}

func TestParseTestArgs(t *testing.T) {
	c, err := parseTestArgs([]string{"-v", "-run=^TestA$", "./a", "-short=false", "-count", "2", "-timeout", "30s",
		"-smp", "2", "-m", "256M", "-accel=tcg", "-machine", "pc", "-e", "K=V", "strings", "-bench", ".", "-benchtime=1x",
		"-cpu", "1,2", "-skip", "B", "-args", "-x", "./notapattern"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"-test.v=true", "-test.run=^TestA$", "-test.short=false", "-test.count=2", "-test.bench=.",
		"-test.benchtime=1x", "-test.cpu=1,2", "-test.skip=B", "-test.paniconexit0", "-test.timeout=30s", "-x", "./notapattern"}
	if !slices.Equal(c.testArgs, wantArgs) {
		t.Errorf("test args %q\nwant %q", c.testArgs, wantArgs)
	}
	if !slices.Equal(c.patterns, []string{"./a", "strings"}) || !c.verbose || !c.bench || c.timeout != 30*time.Second ||
		c.smp != 2 || c.mem != "256M" || c.accel != "tcg" || c.machine != "pc" || !slices.Equal(c.env, []string{"K=V"}) {
		t.Errorf("config %+v", c)
	}

	// go test's other flags: to the test binary, to the build, yolk test's own.
	f, err := parseTestArgs([]string{"-C=dir", "-benchmem", "-failfast", "-list", "^T", "-parallel=3", "-shuffle", "42", "-fullpath",
		"-tags", "a,b", "-ldflags=-s", "-gcflags", "all=-N", "-trimpath", "-cover", "-covermode=atomic", "-o", "out/",
		"-c", "-json", "-v", "-vet=off", "-p", "3", "-memprofilerate=1", "./a"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs = []string{"-test.benchmem=true", "-test.failfast=true", "-test.list=^T", "-test.parallel=3", "-test.shuffle=42",
		"-test.fullpath=true", "-test.memprofilerate=1", "-test.v=test2json", "-test.paniconexit0", "-test.timeout=10m0s"}
	wantBuild := []string{"-tags=a,b", "-gcflags=all=-N", "-trimpath=true", "-cover=true", "-covermode=atomic"}
	if !slices.Equal(f.testArgs, wantArgs) || !slices.Equal(f.buildFlags, wantBuild) || f.ldflags != "-s" || f.tags != "a,b" ||
		!f.compile || !f.json || !f.list || !f.failfast || !f.cover || !f.vetOff || f.procs != 3 || f.output != "out/" || f.chdir != "dir" {
		t.Errorf("config %+v\nwant test args %q, build flags %q", f, wantArgs, wantBuild)
	}
	if v, off, err := parseVet("printf,atomic"); err != nil || off || !slices.Equal(v, []string{"-printf", "-atomic"}) {
		t.Errorf("-vet=printf,atomic: %q %v %v", v, off, err)
	}
	if v, off, err := parseVet("all"); err != nil || off || v != nil {
		t.Errorf("-vet=all: %q %v %v", v, off, err)
	}

	d, err := parseTestArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.testArgs, []string{"-test.paniconexit0", "-test.timeout=10m0s"}) || d.smp != 1 || d.accel != "auto" ||
		!slices.Equal(d.vet, defaultVet) || d.vetOff || d.procs < 1 {
		t.Errorf("defaults %+v", d)
	}

	for _, bad := range [][]string{{"-race"}, {"-fuzz", "F"}, {"-exec", "x"}, {"-cpuprofile"}, {"-nosuch"}, {"-run"}, {"-p", "0"}, {"-vet", "a=b"}, {"-compiler", "gccgo"}, {"-v", "-C", "dir"}, {"-smp", "65"}, {"-smp", "0"}, {"-timeout", "soon"}, {"-v=maybe"}, {"-e", "NOVALUE"}} {
		if _, err := parseTestArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestFailureNotes(t *testing.T) {
	for _, c := range []struct {
		res    qemu.Result
		output bool
		want   []string
	}{
		{qemu.Result{ExitCode: 1}, true, nil},
		{qemu.Result{ExitCode: 1}, false, []string{"exit status 1"}},
		{qemu.Result{ExitCode: 2}, true, nil},
		{qemu.Result{ExitCode: 125}, true, []string{"yolk: the kernel reported a fault (exit status 125)"}},
		{qemu.Result{ExitCode: qemu.ExitTimeout, TimedOut: true, Messages: []string{"yolk: timeout after 11m0s"}}, true,
			[]string{"*** Test killed: ran too long (11m0s): QEMU stopped a minute after the test binary's -timeout."}},
		{qemu.Result{ExitCode: qemu.ExitReset, Messages: []string{"yolk: guest reset without an exit report (triple fault?)"}}, true,
			[]string{"yolk: guest reset without an exit report (triple fault?)"}},
	} {
		if got := failureNotes(&c.res, 11*time.Minute, c.output); !slices.Equal(got, c.want) {
			t.Errorf("status %d, output %v: %q, want %q", c.res.ExitCode, c.output, got, c.want)
		}
	}
	if h := hints(&qemu.Result{ExitCode: qemu.ExitTimeout}); len(h) != 1 || !strings.Contains(h[0], "-timeout") {
		t.Errorf("timeout hint %q", h)
	}
	if h := hints(&qemu.Result{ExitCode: 1}); len(h) != 0 {
		t.Errorf("hints %q for an ordinary failure", h)
	}
	if hasProgramOutput([]byte("yolk: boot: x\nyolk: exit 1\n")) || !hasProgramOutput([]byte("yolk: boot\npipe2: function not implemented\n")) {
		t.Error("hasProgramOutput")
	}
}

func TestTestUsageErrors(t *testing.T) {
	yolk := buildYolk(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"test", "-nosuch", "./..."}, "flag provided but not defined: -nosuch"},
		{[]string{"test", "-race", "./..."}, "-race is not supported: needs cgo"},
		{[]string{"test", "-fuzz=Fuzz", "./..."}, "-fuzz is not supported: the fuzzing engine runs worker processes"},
		{[]string{"test", "-h"}, "usage: yolk test"},
		{[]string{"test", "-smp", "65", "strings"}, "-smp 65: the kernel runs 1 to 64 CPUs"},
	} {
		_, stderr, code := runIn(t, ".", yolk, c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("yolk %q: status %d\n%s", c.args, code, stderr)
		}
	}
	// go test's rule and status: a profile is of one package.
	_, stderr, code := runIn(t, "testdata/yolktest", yolk, "test", "-cpuprofile", "cpu.out", "./pass", "./fail")
	if code != 1 || !strings.Contains(stderr, "cannot use -cpuprofile flag with multiple packages") {
		t.Errorf("yolk test -cpuprofile with two packages: status %d\n%s", code, stderr)
	}
}

// TestOutputs: the output-file flags' shares and test binary arguments —
// the output directory at /yolk/out with -test.outputdir, a profile named
// by an absolute path elsewhere in a share of its own, -coverprofile's
// temporary directory at /yolk/cover — and the coverage profile's merge
// under go test's mode line, refusing another mode.
func TestOutputs(t *testing.T) {
	c, err := parseTestArgs([]string{"-cpuprofile=cpu.prof", "-trace", "trace.out", "-memprofile=", "-artifacts",
		"-outputdir", "o", "-coverprofile=c.out", "-covermode=count", "./a"})
	if err != nil {
		t.Fatal(err)
	}
	if c.outputDir != "o" || !c.artifacts || c.coverMode != "count" || !c.cover || c.profileFlag() != "cpuprofile" || !c.needBinary() ||
		len(c.files) != 3 || !slices.Contains(c.buildFlags, "-cover=true") || slices.ContainsFunc(c.testArgs, func(a string) bool {
		return strings.Contains(a, "profile") || strings.Contains(a, "outputdir") || strings.Contains(a, "trace")
	}) {
		t.Errorf("config %+v", c)
	}
	if img, err := c.imagePath("a", false); err != nil || img != "a.test" {
		t.Errorf("image %q, %v; want a.test kept for pprof", img, err)
	}
	out, elsewhere := t.TempDir(), t.TempDir()
	c.files["trace"] = filepath.Join(elsewhere, "trace.out")
	tr := &tester{c: c, tmp: t.TempDir(), outDir: out}
	shares, args, cover, err := tr.outputs(3, false)
	if err != nil {
		t.Fatal(err)
	}
	wantShares := []qemu.Share{{HostDir: out, GuestPath: "/yolk/out"}, {HostDir: elsewhere, GuestPath: "/yolk/out1"},
		{HostDir: cover, GuestPath: "/yolk/cover"}}
	wantArgs := []string{"-test.outputdir=/yolk/out", "-test.artifacts=true", "-test.cpuprofile=/yolk/out/cpu.prof",
		"-test.trace=/yolk/out1/trace.out", "-test.gocoverdir=/yolk/cover/gocoverdir", "-test.coverprofile=/yolk/cover/_cover_.out"}
	if !slices.Equal(shares, wantShares) || !slices.Equal(args, wantArgs) || filepath.Dir(cover) != tr.tmp {
		t.Errorf("shares %+v\nargs %q\nwant %+v\n%q", shares, args, wantShares, wantArgs)
	}
	if st, err := os.Stat(filepath.Join(cover, "gocoverdir")); err != nil || !st.IsDir() {
		t.Errorf("gocoverdir: %v", err)
	}

	if err := tr.createCoverProfile(); err != nil {
		t.Fatal(err)
	}
	if err := tr.cover.merge(cover); err != nil { // no profile written: the mode line alone
		t.Error(err)
	}
	block := "a/a.go:3.14,5.2 1 7\n"
	os.WriteFile(filepath.Join(cover, "_cover_.out"), []byte("mode: count\n"+block), 0o666)
	if err := tr.cover.merge(cover); err != nil {
		t.Error(err)
	}
	os.WriteFile(filepath.Join(cover, "_cover_.out"), []byte("mode: set\n"+block), 0o666)
	if err := tr.cover.merge(cover); err == nil || !strings.Contains(err.Error(), "malformed coverage profile") {
		t.Errorf("merge of another mode: %v", err)
	}
	tr.cover.f.Close()
	if b, _ := os.ReadFile(filepath.Join(out, "c.out")); string(b) != "mode: count\n"+block {
		t.Errorf("c.out %q", b)
	}

	// No output files: no shares, no arguments.
	d, _ := parseTestArgs([]string{"-v", "./a"})
	if shares, args, cover, err := (&tester{c: d, tmp: t.TempDir(), outDir: out}).outputs(0, false); shares != nil || args != nil || cover != "" || err != nil {
		t.Errorf("without output flags: %v %q %q %v", shares, args, cover, err)
	}
	// -coverpkg's recount (testcover.go): the coverage data on the host,
	// without a profile.
	shares, args, cover, err = (&tester{c: d, tmp: t.TempDir(), outDir: out}).outputs(2, true)
	if !slices.Equal(shares, []qemu.Share{{HostDir: cover, GuestPath: "/yolk/cover"}}) || !slices.Equal(args, []string{"-test.gocoverdir=/yolk/cover/gocoverdir"}) || err != nil {
		t.Errorf("gocoverdir alone: %v %q %q %v", shares, args, cover, err)
	}
}

// TestCoverLineWriter: the guest's output passes unchanged and at once
// but for whole lines that start with "coverage: ", which go through the
// recount, their line ends kept, however the writes split them.
func TestCoverLineWriter(t *testing.T) {
	in := "=== RUN   TestA\r\ncov\nPASS\ncoverage: 50.0% of statements in ./a\r\nx coverage: 1%\ncoverage: [no statements]"
	want := "=== RUN   TestA\r\ncov\nPASS\nFIXED(coverage: 50.0% of statements in ./a)\r\nx coverage: 1%\nFIXED(coverage: [no statements])"
	for _, n := range []int{1, 2, 3, 7, len(in)} {
		var b bytes.Buffer
		w := &coverLineWriter{w: &b, fix: func(l string) string { return "FIXED(" + l + ")" }}
		for s := in; s != ""; {
			k := min(n, len(s))
			w.Write([]byte(s[:k]))
			s = s[k:]
			if n == 1 && len(s) == len(in)-1 && b.String() != "=" {
				t.Errorf("writes of 1: the first byte held back (%q)", b.String())
			}
		}
		w.Flush()
		if b.String() != want {
			t.Errorf("writes of %d: %q, want %q", n, b.String(), want)
		}
	}
}

// TestTestArch: yolk test builds for -arch, else $GOARCH when the kernel
// runs on it, else amd64; the default machine follows, and another
// architecture's machine is refused.
func TestTestArch(t *testing.T) {
	for _, c := range []struct {
		goarch  string
		args    []string
		arch    string
		machine string
	}{
		{"", nil, "amd64", "microvm"},
		{"arm64", nil, "arm64", "virt"},
		{"riscv64", nil, "amd64", "microvm"},
		{"arm64", []string{"-arch", "amd64"}, "amd64", "microvm"},
		{"", []string{"-arch", "arm64", "-machine", "virt-gicv3"}, "arm64", "virt-gicv3"},
	} {
		t.Setenv("GOARCH", c.goarch)
		got, err := parseTestArgs(c.args)
		if err != nil || got.arch != c.arch || got.machine != c.machine {
			t.Errorf("GOARCH=%q %q: %+v, %v; want %s on %s", c.goarch, c.args, got, err, c.arch, c.machine)
		}
	}
	t.Setenv("GOARCH", "")
	for _, bad := range [][]string{{"-arch", "arm64", "-machine", "q35"}, {"-machine", "virt"}, {"-arch", "riscv64"}} {
		if _, err := parseTestArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// listPackages lists for the target architecture: a package whose only
// test file is arm64's has tests for arm64 and none for amd64.
func TestListPackagesArch(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"go.mod":          "module armonly\n\ngo 1.26\n",
		"a.go":            "package armonly\n",
		"a_arm64_test.go": "package armonly\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	t.Setenv("GOWORK", "off")
	for arch, want := range map[string]int{"arm64": 1, "amd64": 0} {
		pkgs, err := listPackages(t.Context(), arch, nil, []string{"."})
		if err != nil || len(pkgs) != 1 || pkgs[0].Error != nil || len(pkgs[0].TestGoFiles) != want {
			t.Errorf("%s: %+v, %v; want %d test files", arch, pkgs, err, want)
		}
	}
}

func TestTestDiskFlag(t *testing.T) {
	img := filepath.Join(t.TempDir(), "d.img")
	if err := os.WriteFile(img, make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parseTestArgs([]string{"-disk", img + ",ro:/data", "-disk=" + img, "./a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.disks) != 2 || !c.disks[0].ReadOnly || c.disks[0].GuestPath != "/data" || c.disks[1].File != img {
		t.Errorf("disks %+v", c.disks)
	}
	if _, err := parseTestArgs([]string{"-disk", img + ",if=ide", "./a"}); err == nil {
		t.Error("-disk with a bad interface accepted")
	}
}
