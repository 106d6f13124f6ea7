// Package report parses the self-test report a yolk guest prints on its
// serial port: "go test -v" lines (=== RUN, --- PASS/FAIL/SKIP with
// durations, indented output, Parent/Child subtests, a final PASS or FAIL),
// Go benchmark result lines, and the kernel's own lines ("yolk: exit N",
// "yolk: fault ..." reports, Go "panic:"/"fatal error:" output).
//
// The parser is line-at-a-time and never fails: it records what it saw, and
// Problems says what makes the run a failure. It does not judge individual
// test results; callers map each Test to a subtest.
package report

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Result of one guest test.
type Result string

const (
	Running Result = ""     // started, no result line (yet)
	Pass    Result = "PASS" //
	Fail    Result = "FAIL" //
	Skip    Result = "SKIP" //
)

// Test is one guest test or subtest.
type Test struct {
	Name    string   // full name, "Parent/Child" for subtests
	Result  Result   //
	Elapsed string   // as printed, e.g. "0.01s"
	Output  []string // lines attributed to the test, as printed
}

// Report is everything parsed from one guest run.
type Report struct {
	Tests      []*Test  // in order of first appearance
	Summary    Result   // the final "PASS" or "FAIL" line; Running if none
	Benchmarks []string // benchmark result lines, as printed
	Config     []string // benchmark configuration lines ("goos: ...", "cpu: ...")
	Fault      []string // from the first "yolk: fault" line on
	Panic      []string // from the first "panic: " or "fatal error: " line on
	Exit       int      // N of the last "yolk: exit N" line
	HaveExit   bool     //
	Other      []string // lines outside any test

	byName  map[string]*Test
	current *Test // the test that unattributed lines belong to
	closed  bool  // current has printed its result: only indented lines follow
	fault   bool  // inside a fault report
	panic   bool  // inside a panic report
}

var (
	markerRE = regexp.MustCompile(`^=== (RUN|CONT|PAUSE|NAME)\s+(\S.*)$`)
	resultRE = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): (.+) \(([^()]*)\)$`)
	benchRE  = regexp.MustCompile(`^Benchmark\S*\s+\d+\s+.*\s(ns/op|B/op|allocs/op|MB/s)\b`)
	configRE = regexp.MustCompile(`^(goos|goarch|pkg|cpu): `)
	exitRE   = regexp.MustCompile(`^yolk: exit (0|[1-9][0-9]{0,2})$`)
)

// Parse reads a whole transcript.
func Parse(r io.Reader) *Report {
	rep := New()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		rep.Line(sc.Text())
	}
	return rep
}

// New returns an empty report to feed with Line.
func New() *Report { return &Report{byName: map[string]*Test{}} }

// Test returns the test of that name, or nil.
func (r *Report) Test(name string) *Test { return r.byName[name] }

func (r *Report) test(name string) *Test {
	t := r.byName[name]
	if t == nil {
		t = &Test{Name: name}
		r.byName[name] = t
		r.Tests = append(r.Tests, t)
	}
	return t
}

// Line adds one line of serial output (a trailing CR is dropped).
func (r *Report) Line(line string) {
	line = strings.TrimSuffix(line, "\r")
	if m := exitRE.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n <= 255 {
			r.Exit, r.HaveExit = n, true
			r.fault, r.panic = false, false
			return
		}
	}
	if strings.HasPrefix(line, "yolk: fault") {
		r.fault = true
	}
	if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
		r.panic = true
	}
	if r.fault {
		r.Fault = append(r.Fault, line)
	}
	if r.panic {
		r.Panic = append(r.Panic, line)
	}
	if r.fault || r.panic {
		// Also keep it with the test that was running, for its log.
		if r.current != nil {
			r.current.Output = append(r.current.Output, line)
		}
		return
	}

	if r.closed && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
		r.current, r.closed = nil, false
	}
	switch {
	case markerRE.MatchString(line):
		m := markerRE.FindStringSubmatch(line)
		r.current, r.closed = r.test(m[2]), false
		return
	case resultRE.MatchString(line):
		m := resultRE.FindStringSubmatch(line)
		t := r.test(m[3])
		t.Result, t.Elapsed = Result(m[2]), m[4]
		r.current, r.closed = t, true
		return
	case line == "PASS" || line == "FAIL":
		r.Summary = Result(line)
		r.current, r.closed = nil, false
		return
	case benchRE.MatchString(line):
		r.Benchmarks = append(r.Benchmarks, line)
		return
	case configRE.MatchString(line) && r.current == nil:
		r.Config = append(r.Config, line)
		return
	}
	if r.current != nil {
		r.current.Output = append(r.current.Output, line)
	} else {
		r.Other = append(r.Other, line)
	}
}

// Running returns the last test that was started and has no result.
func (r *Report) Running() string {
	for i := len(r.Tests) - 1; i >= 0; i-- {
		if r.Tests[i].Result == Running {
			return r.Tests[i].Name
		}
	}
	return ""
}

// Outcome is how the guest run ended, as seen by the host.
type Outcome struct {
	TimedOut bool          // the host killed the guest at the timeout
	Timeout  time.Duration // the timeout, for the message
	ExitCode int           // the status the runner derived
}

// Problems lists why the run fails as a whole, independent of the results of
// individual tests: a timeout (naming the test that was running), a kernel
// fault report, a Go panic, a missing "yolk: exit" line or final summary,
// tests without a result, and an exit status that disagrees with the
// summary. An empty list means the report is complete and consistent.
func (r *Report) Problems(o Outcome) []string {
	var p []string
	if o.TimedOut {
		if name := r.Running(); name != "" {
			p = append(p, fmt.Sprintf("timeout after %v while guest test %s was running", o.Timeout, name))
		} else {
			p = append(p, fmt.Sprintf("timeout after %v (no guest test running)", o.Timeout))
		}
	}
	if len(r.Fault) > 0 {
		p = append(p, "kernel fault report:\n\t"+strings.Join(r.Fault, "\n\t"))
	}
	if len(r.Panic) > 0 {
		p = append(p, "Go panic in the guest:\n\t"+strings.Join(r.Panic, "\n\t"))
	}
	if !o.TimedOut {
		if !r.HaveExit {
			p = append(p, `no "yolk: exit N" line from the guest`)
		}
		for _, t := range r.Tests {
			if t.Result == Running {
				p = append(p, fmt.Sprintf("guest test %s started but never reported a result", t.Name))
			}
		}
	}
	switch r.Summary {
	case Running:
		p = append(p, "no final PASS/FAIL summary line from the guest")
	case Pass:
		if o.ExitCode != 0 && !o.TimedOut {
			p = append(p, fmt.Sprintf("guest summary PASS but exit status %d", o.ExitCode))
		}
		for _, t := range r.Tests {
			if t.Result == Fail {
				p = append(p, fmt.Sprintf("guest summary PASS but test %s failed", t.Name))
			}
		}
	case Fail:
		if o.ExitCode == 0 {
			p = append(p, "guest summary FAIL but exit status 0")
		}
		failed := false
		for _, t := range r.Tests {
			failed = failed || t.Result == Fail
		}
		if !failed {
			p = append(p, "guest summary FAIL without a failed test")
		}
	}
	return p
}

// Parent returns the test that name is a subtest of: the longest prefix of
// name, cut at a "/", that is a test of the report; "" for a top-level test.
func (r *Report) Parent(name string) string {
	for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
		if r.byName[name[:i]] != nil {
			return name[:i]
		}
	}
	return ""
}

// Children returns the direct subtests of the test called name, or the
// top-level tests for name "", in order of appearance.
func (r *Report) Children(name string) []*Test {
	var c []*Test
	for _, t := range r.Tests {
		if r.Parent(t.Name) == name {
			c = append(c, t)
		}
	}
	return c
}
