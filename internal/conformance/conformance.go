// Package conformance compares the results of Go's own tests run on Linux
// (go test on the host) and on yolk (yolk test): it parses "go test -v"
// output into per-test outcomes, matches the differences against a file of
// known reasons, and renders docs/conformance.md. Host tooling only.
package conformance

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Outcome of one top-level test (subtests are not counted separately).
type Outcome string

const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	Skip Outcome = "skip"
	// NotRun: the package ended (timed out, crashed) before the test
	// reported a result, or the test did not start at all.
	NotRun Outcome = "not run"
)

// Result is one package's outcomes by test name.
type Result struct {
	Pkg   string
	Tests map[string]Outcome
	// Status is the package line's verdict: "ok", "FAIL" or "" if the
	// output had none.
	Status string
	// Running names the test that had started but not finished when the
	// output ended (a timeout or crash), if any.
	Running string
}

var (
	resultLine = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(`)
	runLine    = regexp.MustCompile(`^=== (RUN|PAUSE|CONT) +(\S+)$`)
	pkgLine    = regexp.MustCompile(`^(ok|FAIL|\?)\s+(\S+)(\s|$)`)
)

// Parse reads the "-v" output of go test or yolk test for one or more
// packages; a package's lines end at its "ok"/"FAIL" line. Only top-level
// tests count (result lines without indentation). When a package ends
// (a timeout, a panic) with tests unfinished, the one running is Fail and
// named by Running; paused parallel tests that never continued are NotRun.
func Parse(r io.Reader) ([]*Result, error) {
	var out []*Result
	cur := &Result{Tests: map[string]Outcome{}}
	running := map[string]bool{} // started, no result; false: paused
	last := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := runLine.FindStringSubmatch(line); m != nil && !strings.Contains(m[2], "/") {
			running[m[2]] = m[1] != "PAUSE"
			if m[1] != "PAUSE" {
				last = m[2]
			}
			continue
		}
		if m := resultLine.FindStringSubmatch(line); m != nil && !strings.Contains(m[2], "/") {
			cur.Tests[m[2]] = map[string]Outcome{"PASS": Pass, "FAIL": Fail, "SKIP": Skip}[m[1]]
			delete(running, m[2])
			continue
		}
		if m := pkgLine.FindStringSubmatch(line); m != nil && strings.Contains(line, "\t") {
			cur.Pkg, cur.Status = m[2], m[1]
			for name, active := range running {
				if _, ok := cur.Tests[name]; !ok {
					cur.Tests[name] = NotRun
					if active {
						cur.Tests[name] = Fail
						if cur.Running == "" || name == last {
							cur.Running = name
						}
					}
				}
			}
			out = append(out, cur)
			cur = &Result{Tests: map[string]Outcome{}}
			running, last = map[string]bool{}, ""
		}
	}
	return out, sc.Err()
}

// Counts are a package's pass/fail/skip totals.
type Counts struct{ Pass, Fail, Skip int }

func (r *Result) Counts() Counts {
	var c Counts
	if r == nil {
		return c
	}
	for _, o := range r.Tests {
		switch o {
		case Pass:
			c.Pass++
		case Fail, NotRun:
			c.Fail++
		case Skip:
			c.Skip++
		}
	}
	return c
}

func (c Counts) String() string { return fmt.Sprintf("%d / %d / %d", c.Pass, c.Fail, c.Skip) }

// Allowed are the reason categories the target excludes: tests that need
// network sockets, child processes or host files outside the package and
// GOROOT, and, at -smp 1 only (entries Test@1), tests that skip themselves
// with one CPU where the host has more.
var Allowed = map[string]bool{"socket": true, "child-process": true, "host-file": true, "one-cpu": true}

// Reason says why a test differs. Skip: the test stops the whole test
// binary on yolk (a panic), so yolk runs the package with -skip for it and
// the others still run.
type Reason struct {
	Category, Text string
	Skip           bool
}

// Reasons maps "pkg Test" (or "pkg Prefix*") to a reason.
type Reasons map[string]Reason

// ParseReasons reads lines "pkg Test category: text" (# comments). Test
// may end in * (a prefix) and @N (only at -smp N); category may end in !
// (Reason.Skip).
func ParseReasons(r io.Reader) (Reasons, error) {
	rs := Reasons{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		cat, text, ok := strings.Cut(strings.Join(f[min(2, len(f)):], " "), ":")
		if len(f) < 3 || !ok {
			return nil, fmt.Errorf("reasons line %d: want \"pkg Test category: text\": %q", n, line)
		}
		cat = strings.TrimSpace(cat)
		skip := strings.HasSuffix(cat, "!")
		rs[f[0]+" "+f[1]] = Reason{strings.TrimSuffix(cat, "!"), strings.TrimSpace(text), skip}
	}
	return rs, sc.Err()
}

// Lookup finds the reason for pkg's test at -smp smp: an entry for that
// CPU count first, then by exact name, then by prefix.
func (rs Reasons) Lookup(pkg, test string, smp int) (Reason, bool) {
	if r, ok := rs[fmt.Sprintf("%s %s@%d", pkg, test, smp)]; ok {
		return r, true
	}
	if r, ok := rs[pkg+" "+test]; ok {
		return r, true
	}
	best := ""
	for k := range rs {
		p, t, _ := strings.Cut(k, " ")
		if p == pkg && strings.HasSuffix(t, "*") && strings.HasPrefix(test, strings.TrimSuffix(t, "*")) && len(t) > len(best) {
			best = k
		}
	}
	if best != "" {
		return rs[best], true
	}
	return Reason{}, false
}

// Diff is a test whose outcome differs.
type Diff struct {
	Pkg, Test     string
	Linux, Yolk   Outcome
	Reason        Reason
	Explained     bool
	AgainstTarget bool // passes on Linux, not on yolk, and not an allowed exclusion
}

// Skips lists the tests of pkg that yolk must run without (Reason.Skip).
func (rs Reasons) Skips(pkg string) []string {
	var ts []string
	for k, r := range rs {
		if p, t, _ := strings.Cut(k, " "); p == pkg && r.Skip {
			ts = append(ts, t)
		}
	}
	sort.Strings(ts)
	return ts
}

// Compare lists the tests whose outcomes differ in a package at -smp smp.
func Compare(pkg string, smp int, linux, yolk *Result, rs Reasons) []Diff {
	names := map[string]bool{}
	for n := range linux.Tests {
		names[n] = true
	}
	if yolk != nil {
		for n := range yolk.Tests {
			names[n] = true
		}
	}
	var ds []Diff
	for n := range names {
		l, ok := linux.Tests[n]
		if !ok {
			l = NotRun
		}
		y := NotRun
		if yolk != nil {
			if o, ok := yolk.Tests[n]; ok {
				y = o
			}
		}
		if l == y {
			continue
		}
		d := Diff{Pkg: pkg, Test: n, Linux: l, Yolk: y}
		d.Reason, d.Explained = rs.Lookup(pkg, n, smp)
		if !d.Explained && y == NotRun && yolk != nil && yolk.Running != "" {
			d.Reason, d.Explained = Reason{Category: "bug", Text: "not reached: the package stopped in " + yolk.Running}, true
		}
		d.AgainstTarget = l == Pass && !(d.Explained && Allowed[d.Reason.Category])
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Test < ds[j].Test })
	return ds
}

// Run is one side's results for every package.
type Run map[string]*Result

// Index makes a Run from parsed results.
func Index(rs []*Result) Run {
	run := Run{}
	for _, r := range rs {
		run[r.Pkg] = r
	}
	return run
}

// Table is the comparison at one CPU count.
type Table struct {
	SMP   int
	Pkgs  []string
	Linux Run
	Yolk  Run
	Diffs map[string][]Diff
}

// NewTable compares linux and yolk for pkgs.
func NewTable(smp int, pkgs []string, linux, yolk Run, rs Reasons) *Table {
	t := &Table{SMP: smp, Pkgs: pkgs, Linux: linux, Yolk: yolk, Diffs: map[string][]Diff{}}
	for _, p := range pkgs {
		l := linux[p]
		if l == nil {
			l = &Result{Pkg: p, Tests: map[string]Outcome{}}
		}
		t.Diffs[p] = Compare(p, smp, l, yolk[p], rs)
	}
	return t
}

// Against lists the differences that count against the target.
func (t *Table) Against() []Diff {
	var ds []Diff
	for _, p := range t.Pkgs {
		for _, d := range t.Diffs[p] {
			if d.AgainstTarget {
				ds = append(ds, d)
			}
		}
	}
	return ds
}

// Render writes the table as Markdown.
func (t *Table) Render(w io.Writer) {
	fmt.Fprintf(w, "### -smp %d\n\n", t.SMP)
	fmt.Fprintf(w, "| package | Linux pass / fail / skip | yolk pass / fail / skip | tests that differ (Linux → yolk: reason) |\n|---|---|---|---|\n")
	var lt, yt Counts
	for _, p := range t.Pkgs {
		lc, yc := t.Linux[p].Counts(), t.Yolk[p].Counts()
		lt.Pass, lt.Fail, lt.Skip = lt.Pass+lc.Pass, lt.Fail+lc.Fail, lt.Skip+lc.Skip
		yt.Pass, yt.Fail, yt.Skip = yt.Pass+yc.Pass, yt.Fail+yc.Fail, yt.Skip+yc.Skip
		var notes []string
		for _, d := range t.Diffs[p] {
			why := "UNEXPLAINED"
			if d.Explained {
				why = d.Reason.Category + ": " + d.Reason.Text
			}
			notes = append(notes, fmt.Sprintf("`%s` (%s → %s: %s)", d.Test, d.Linux, d.Yolk, why))
		}
		ys := yc.String()
		if t.Yolk[p] == nil {
			ys = "no result"
		} else if t.Yolk[p].Running != "" {
			ys += " (stopped in " + t.Yolk[p].Running + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", p, lc, ys, strings.Join(notes, "; "))
	}
	fmt.Fprintf(w, "| **total** | **%s** | **%s** | |\n\n", lt, yt)
	against := t.Against()
	if len(against) == 0 {
		fmt.Fprintf(w, "Every test that passes on Linux passes on yolk at -smp %d, except the allowed exclusions named above.\n\n", t.SMP)
		return
	}
	fmt.Fprintf(w, "Tests that pass on Linux and not on yolk at -smp %d, not an allowed exclusion (%d):\n\n", t.SMP, len(against))
	for _, d := range against {
		why := "UNEXPLAINED"
		if d.Explained {
			why = d.Reason.Category + ": " + d.Reason.Text
		}
		fmt.Fprintf(w, "- %s `%s`: %s on yolk — %s\n", d.Pkg, d.Test, d.Yolk, why)
	}
	fmt.Fprintln(w)
}
