// Command selftest is yolk's default image: the kernel self-test suite. It
// runs as an ordinary Go program on top of the kernel and prints its results
// in "go test -v" format on the serial console (=== RUN, --- PASS/FAIL with
// durations, benchmark lines, a final PASS or FAIL), then exits 0 or 1.
// The host harness in package qemu turns each test into a subtest.
//
// Arguments: -run REGEXP selects tests, -bench REGEXP runs benchmarks too.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	_ "yolk/kernel"
)

// T is the handle a self-test gets.
type T struct {
	name   string
	mu     sync.Mutex
	log    strings.Builder
	failed bool
}

func (t *T) Logf(format string, args ...any) {
	t.mu.Lock()
	fmt.Fprintf(&t.log, "    "+format+"\n", args...)
	t.mu.Unlock()
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

type test struct {
	name string
	fn   func(*T)
}

type bench struct {
	name     string
	fn       func(*testing.B)
	yolkOnly bool // uses yolk's own system calls
}

// onYolk reports whether the kernel answers yolk's own system calls.
func onYolk() bool {
	var s kernelStats
	_, _, e := syscall.Syscall(sysYolkStats, uintptr(unsafe.Pointer(&s)), 0, 0)
	return e == 0
}

var tests []test
var benches []bench

func main() {
	run := flag.String("run", ".", "run tests matching `regexp`")
	benchRe := flag.String("bench", "", "run benchmarks matching `regexp`")
	flag.Parse()
	runRe := regexp.MustCompile(*run)
	failed := false
	for _, tc := range tests {
		if !runRe.MatchString(tc.name) {
			continue
		}
		fmt.Printf("=== RUN   %s\n", tc.name)
		t := &T{name: tc.name}
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			tc.fn(t)
		}()
		<-done
		d := time.Since(start)
		status := "PASS"
		if t.failed {
			status = "FAIL"
			failed = true
		}
		fmt.Printf("--- %s: %s (%.2fs)\n%s", status, tc.name, d.Seconds(), t.log.String())
	}
	if *benchRe != "" {
		re := regexp.MustCompile(*benchRe)
		yolk := onYolk()
		fmt.Printf("goos: %s\ngoarch: %s\npkg: yolk/kernel/selftest\n", runtime.GOOS, runtime.GOARCH)
		for _, b := range benches {
			if !re.MatchString(b.name) || b.yolkOnly && !yolk {
				continue
			}
			r := testing.Benchmark(b.fn)
			fmt.Printf("%s-%d\t%s\t%s\n", b.name, runtime.GOMAXPROCS(0), r.String(), r.MemString())
		}
	}
	if failed {
		fmt.Println("FAIL")
		os.Exit(1)
	}
	fmt.Println("PASS")
}
