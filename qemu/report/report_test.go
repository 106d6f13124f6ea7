package report

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseFile(t *testing.T, name string) *Report {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Parse(f)
}

func names(ts []*Test) []string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	return n
}

func TestPassingTranscript(t *testing.T) {
	r := parseFile(t, "pass.txt")
	if got, want := names(r.Tests), []string{
		"TestMemoryReserveCommit", "TestTimers", "TestTimers/20us", "TestTimers/1ms", "TestKVMClock",
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tests %q, want %q", got, want)
	}
	if got := names(r.Children("")); !reflect.DeepEqual(got, []string{"TestMemoryReserveCommit", "TestTimers", "TestKVMClock"}) {
		t.Errorf("top level %q", got)
	}
	if got := names(r.Children("TestTimers")); !reflect.DeepEqual(got, []string{"TestTimers/20us", "TestTimers/1ms"}) {
		t.Errorf("children %q", got)
	}
	timers := r.Test("TestTimers/1ms")
	if timers.Result != Pass || timers.Elapsed != "0.00s" ||
		!reflect.DeepEqual(timers.Output, []string{"    timers_test.go:41: requested 1ms slept 1.07ms"}) {
		t.Errorf("TestTimers/1ms = %+v", timers)
	}
	if k := r.Test("TestKVMClock"); k.Result != Skip || len(k.Output) != 1 {
		t.Errorf("TestKVMClock = %+v", k)
	}
	if r.Summary != Pass || !r.HaveExit || r.Exit != 0 {
		t.Errorf("summary %q exit %d/%v", r.Summary, r.Exit, r.HaveExit)
	}
	if len(r.Benchmarks) != 3 || !strings.HasPrefix(r.Benchmarks[0], "BenchmarkTaskSwitch/minimal-1 ") ||
		!strings.Contains(r.Benchmarks[2], "allocs/op") {
		t.Errorf("benchmarks %q", r.Benchmarks)
	}
	if len(r.Config) != 4 || r.Config[3] != "cpu: QEMU TCG CPU version 2.5+" {
		t.Errorf("config %q", r.Config)
	}
	// Bare benchmark name lines carry no result; they stay outside any test.
	if len(r.Other) != 3 || !strings.HasPrefix(r.Other[0], "yolk: boot") || r.Other[2] != "BenchmarkTaskSwitch/minimal" {
		t.Errorf("other %q", r.Other)
	}
	if p := r.Problems(Outcome{ExitCode: 0}); len(p) != 0 {
		t.Errorf("problems %q", p)
	}
	// The same report with a nonzero exit status is inconsistent.
	if p := r.Problems(Outcome{ExitCode: 1}); len(p) != 1 || p[0] != "guest summary PASS but exit status 1" {
		t.Errorf("problems with exit 1: %q", p)
	}
}

func TestFailingTranscript(t *testing.T) {
	r := parseFile(t, "fail.txt")
	want := map[string]Result{
		"TestFutexTimeout": Pass, "TestSched": Fail, "TestSched/NoTaskLost": Fail,
		"TestSched/NodeBound": Pass, "TestExitStatus": Pass,
	}
	for name, res := range want {
		if got := r.Test(name); got == nil || got.Result != res {
			t.Errorf("%s = %+v, want %s", name, got, res)
		}
	}
	if out := r.Test("TestSched/NoTaskLost").Output; len(out) != 2 || !strings.Contains(out[0], "ran twice") {
		t.Errorf("NoTaskLost output %q", out)
	}
	if r.Summary != Fail || r.Exit != 1 {
		t.Errorf("summary %q exit %d", r.Summary, r.Exit)
	}
	// Failing tests are reported per test, not as a problem of the run.
	if p := r.Problems(Outcome{ExitCode: 1}); len(p) != 0 {
		t.Errorf("problems %q", p)
	}
	if p := r.Problems(Outcome{ExitCode: 0}); len(p) != 1 || p[0] != "guest summary FAIL but exit status 0" {
		t.Errorf("problems with exit 0: %q", p)
	}
}

func TestTimeoutTranscript(t *testing.T) {
	r := parseFile(t, "timeout.txt")
	if r.Running() != "TestGoroutines10k" {
		t.Errorf("running %q", r.Running())
	}
	if out := r.Test("TestGoroutines10k").Output; len(out) != 1 {
		t.Errorf("output %q", out)
	}
	p := r.Problems(Outcome{TimedOut: true, Timeout: 10 * time.Minute, ExitCode: 124})
	want := []string{
		"timeout after 10m0s while guest test TestGoroutines10k was running",
		"no final PASS/FAIL summary line from the guest",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("problems %q, want %q", p, want)
	}
	// The same transcript ending without a timeout: QEMU stopped early.
	p = r.Problems(Outcome{ExitCode: 125})
	want = []string{
		`no "yolk: exit N" line from the guest`,
		"guest test TestGoroutines10k started but never reported a result",
		"no final PASS/FAIL summary line from the guest",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("problems %q, want %q", p, want)
	}
}

// TestWatchdogTranscript: the guest runner's per-test timeout prints
// "--- FAIL: Name (timeout)", the message, FAIL and exits 1; the report
// names the test as failed and finds nothing else wrong.
func TestWatchdogTranscript(t *testing.T) {
	r := parseFile(t, "watchdog.txt")
	tt := r.Test("TestTimerSleepAccuracy")
	if tt == nil || tt.Result != Fail || tt.Elapsed != "timeout" {
		t.Fatalf("hung test: %+v", tt)
	}
	if want := []string{"    sleep 20µs: time.Sleep 697.81µs, nanosleep 551.286µs", "    test timed out after 50ms (-timeout)"}; !reflect.DeepEqual(tt.Output, want) {
		t.Errorf("output %q, want %q", tt.Output, want)
	}
	if r.Running() != "" || r.Summary != Fail || !r.HaveExit || r.Exit != 1 {
		t.Errorf("running %q summary %q exit %v %d", r.Running(), r.Summary, r.HaveExit, r.Exit)
	}
	if p := r.Problems(Outcome{ExitCode: 1}); len(p) != 0 {
		t.Errorf("problems %q", p)
	}
}

func TestFaultTranscript(t *testing.T) {
	r := parseFile(t, "fault.txt")
	if len(r.Fault) != 4 || !strings.HasPrefix(r.Fault[0], "yolk: fault: vector 14") ||
		!strings.Contains(r.Fault[2], "selftest.TestFault+0x29") || strings.HasSuffix(r.Fault[3], "\r") {
		t.Errorf("fault %q", r.Fault)
	}
	if r.Exit != 125 || r.Running() != "TestFault" {
		t.Errorf("exit %d running %q", r.Exit, r.Running())
	}
	// The report is also in the running test's output.
	if out := r.Test("TestFault").Output; len(out) != 5 {
		t.Errorf("TestFault output %q", out)
	}
	p := r.Problems(Outcome{ExitCode: 125})
	if len(p) != 3 || !strings.HasPrefix(p[0], "kernel fault report:\n\tyolk: fault: vector 14") ||
		p[1] != "guest test TestFault started but never reported a result" ||
		p[2] != "no final PASS/FAIL summary line from the guest" {
		t.Errorf("problems %q", p)
	}
}

func TestPanicTranscript(t *testing.T) {
	r := parseFile(t, "panic.txt")
	if len(r.Panic) != 7 || r.Panic[0] != "panic: boom [recovered, repanicked]" {
		t.Errorf("panic %q", r.Panic)
	}
	if r.Test("TestMaps").Result != Pass || r.Running() != "TestRecover" || r.Exit != 2 {
		t.Errorf("tests %+v exit %d", r.Tests, r.Exit)
	}
	p := r.Problems(Outcome{ExitCode: 2})
	if len(p) != 3 || !strings.HasPrefix(p[0], "Go panic in the guest:\n\tpanic: boom") {
		t.Errorf("problems %q", p)
	}
}

func TestLineEdgeCases(t *testing.T) {
	r := New()
	for _, l := range []string{
		"=== RUN   TestA",
		"=== PAUSE TestA",
		"=== RUN   TestB",
		"    b.go:1: from B",
		"=== CONT  TestA",
		"    a.go:1: from A",
		"=== NAME  TestB",
		"    b.go:2: again B",
		"--- PASS: TestB (0.00s)",
		"--- FAIL: TestA (1.50s)",
		"    a.go:2: after the result line",
		"  panic: not at column 0",
		"yolk: exit 256",
		"Benchmark", // a bare name line is not a result
		"FAIL",
		"yolk: exit 1",
	} {
		r.Line(l)
	}
	if got := r.Test("TestB").Output; !reflect.DeepEqual(got, []string{"    b.go:1: from B", "    b.go:2: again B"}) {
		t.Errorf("TestB output %q", got)
	}
	a := r.Test("TestA")
	if a.Result != Fail || a.Elapsed != "1.50s" || !reflect.DeepEqual(a.Output, []string{
		"    a.go:1: from A", "    a.go:2: after the result line", "  panic: not at column 0"}) {
		t.Errorf("TestA %+v", a)
	}
	if !reflect.DeepEqual(r.Other, []string{"yolk: exit 256", "Benchmark"}) {
		t.Errorf("other %q", r.Other)
	}
	if len(r.Panic) != 0 || len(r.Benchmarks) != 0 || r.Exit != 1 || r.Summary != Fail {
		t.Errorf("panic %q bench %q exit %d summary %q", r.Panic, r.Benchmarks, r.Exit, r.Summary)
	}
	if p := r.Problems(Outcome{ExitCode: 1}); len(p) != 0 {
		t.Errorf("problems %q", p)
	}
	// A subtest whose parent has a slash-free name but whose own name has
	// more slashes than levels.
	r2 := New()
	for _, l := range []string{"=== RUN   T", "=== RUN   T/a/b", "    --- PASS: T/a/b (0.00s)", "--- PASS: T (0.00s)"} {
		r2.Line(l)
	}
	if r2.Parent("T/a/b") != "T" || len(r2.Children("T")) != 1 {
		t.Errorf("parent of T/a/b = %q", r2.Parent("T/a/b"))
	}
}
