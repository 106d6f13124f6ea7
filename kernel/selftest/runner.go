// Command selftest is yolk's default image: the kernel self-test suite. It
// runs as an ordinary Go program on top of the kernel and prints its results
// in "go test -v" format on the serial console (=== RUN, --- PASS/FAIL with
// durations, benchmark lines, a final PASS or FAIL), then exits 0 or 1.
// The host harness in package qemu turns each test into a subtest.
//
// Not kernel context: it allocates and uses the runtime like any program,
// and reaches the kernel only through system calls, yolk's private ones
// (kernel/abi) included; of the kernel's packages it imports abi, and the
// kernel itself only to be linked with it.
//
// Arguments: -run REGEXP selects tests, -bench REGEXP runs benchmarks too,
// -timeout D bounds each test (default 60s): a test still running then is
// reported as "--- FAIL: Name (timeout)" and the program exits with status 1
// at once, so one hung test does not hold the machine until the host's boot
// timeout. The watchdog is a runtime timer: a test blocked (channel, lock,
// sleep, futex) or spinning (asynchronous preemption) trips it; only a
// kernel hang leaves it to the host's boot timeout, which names the test.
package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	_ "yolk/kernel"

	"yolk/kernel/abi"
)

// T is the handle a self-test gets.
type T struct {
	name    string
	mu      sync.Mutex
	log     strings.Builder
	failed  bool
	skipped bool
}

func (t *T) Logf(format string, args ...any) {
	t.mu.Lock()
	fmt.Fprintf(&t.log, "    "+format+"\n", args...)
	t.mu.Unlock()
}

// Progressf prints a line of t's log to the console at once, not at the
// test's end: how far a test got that can wedge the whole machine (every
// CPU in the kernel with interrupts off, where the watchdog below cannot
// run and only the host's timeout ends the boot).
func (t *T) Progressf(format string, args ...any) {
	fmt.Printf("    "+format+"\n", args...)
}

func (t *T) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}

// Skipf logs and ends the test as skipped.
func (t *T) Skipf(format string, args ...any) {
	t.Logf(format, args...)
	t.mu.Lock()
	t.skipped = true
	t.mu.Unlock()
	runtime.Goexit()
}

type test struct {
	name string
	fn   func(*T)
}

// slowTests multiplies -timeout for the tests it names: tests whose work
// is fixed by their specification (10⁶ futex operations) rather than by
// time, and which take long with more vCPUs than host cores.
var slowTests = map[string]int{"TestSMPFutexStress": 5}

type bench struct {
	name     string
	fn       func(*testing.B)
	yolkOnly bool // uses yolk's own system calls
}

// benchMinCPUs are the benchmarks that need more than one CPU (b.Skip
// cannot be used: testing.Benchmark's B has no test to skip, and panics).
var benchMinCPUs = map[string]int{"BenchmarkWakeupIPI": 2}

// onYolk reports whether the kernel answers yolk's own system calls.
func onYolk() bool {
	var s abi.Stats
	_, _, e := syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0)
	return e == 0
}

// defaultTestTimeout bounds one test unless -timeout says otherwise.
const defaultTestTimeout = 60 * time.Second

// result is how one test ended.
type result struct {
	status   string // "PASS", "FAIL" or "SKIP"
	elapsed  string // as printed in the result line: "0.01s", or "timeout"
	log      string // the test's log lines, indented
	timedOut bool   // the watchdog fired; the test's goroutine is still running
}

// runTest runs tc on its own goroutine and waits for it to end or for
// timeout to pass.
func runTest(tc test, timeout time.Duration) result {
	t := &T{name: tc.name}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tc.fn(t)
	}()
	watchdog := time.NewTimer(timeout)
	defer watchdog.Stop()
	select {
	case <-done:
	case <-watchdog.C:
		t.mu.Lock()
		defer t.mu.Unlock()
		return result{status: "FAIL", elapsed: "timeout", timedOut: true,
			log: t.log.String() + fmt.Sprintf("    test timed out after %v (-timeout)\n", timeout)}
	}
	r := result{status: "PASS", elapsed: fmt.Sprintf("%.2fs", time.Since(start).Seconds()), log: t.log.String()}
	switch {
	case t.failed:
		r.status = "FAIL"
	case t.skipped:
		r.status = "SKIP"
	}
	return r
}

// The self-tests read the kernel's counters and run kernel-side halves
// through yolk's private calls, which the kernel answers only for an image
// that asks.
func init() { abi.TestCalls = true }

func main() {
	run := flag.String("run", ".", "run tests matching `regexp`")
	skip := flag.String("skip", "", "do not run tests matching `regexp`")
	benchRe := flag.String("bench", "", "run benchmarks matching `regexp`")
	timeout := flag.Duration("timeout", defaultTestTimeout, "fail a test still running after `d` and exit")
	cpuprofile := flag.Bool("cpuprofile", false, "print a CPU profile of the benchmarks, base64 between lines cpuprofile-begin and cpuprofile-end (the guest has no file the host can read)")
	flag.Parse()
	runRe, skipRe := regexp.MustCompile(*run), regexp.MustCompile(*skip)
	failed := false
	for _, tc := range tests {
		if !runRe.MatchString(tc.name) || *skip != "" && skipRe.MatchString(tc.name) {
			continue
		}
		fmt.Printf("=== RUN   %s\n", tc.name)
		r := runTest(tc, *timeout*time.Duration(max(slowTests[tc.name], 1)))
		fmt.Printf("--- %s: %s (%s)\n%s", r.status, tc.name, r.elapsed, r.log)
		if r.timedOut {
			// The hung goroutine cannot be stopped; nothing after it
			// could be trusted to run either.
			fmt.Println("FAIL")
			os.Exit(1)
		}
		failed = failed || r.status == "FAIL"
	}
	if *benchRe != "" {
		re := regexp.MustCompile(*benchRe)
		yolk := onYolk()
		fmt.Printf("goos: %s\ngoarch: %s\npkg: yolk/kernel/selftest\n", runtime.GOOS, runtime.GOARCH)
		var prof bytes.Buffer
		if *cpuprofile {
			pprof.StartCPUProfile(&prof)
		}
		for _, b := range benches {
			if !re.MatchString(b.name) || b.yolkOnly && !yolk || runtime.GOMAXPROCS(0) < benchMinCPUs[b.name] {
				continue
			}
			r := testing.Benchmark(b.fn)
			fmt.Printf("%s-%d\t%s\t%s\n", b.name, runtime.GOMAXPROCS(0), r.String(), r.MemString())
		}
		if *cpuprofile {
			pprof.StopCPUProfile()
			fmt.Printf("cpuprofile-begin\n%s\ncpuprofile-end\n", base64.StdEncoding.EncodeToString(prof.Bytes()))
		}
	}
	if failed {
		fmt.Println("FAIL")
		os.Exit(1)
	}
	fmt.Println("PASS")
}
