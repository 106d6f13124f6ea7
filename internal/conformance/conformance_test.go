package conformance

import (
	"strings"
	"testing"
)

const sample = `=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
=== RUN   TestB/sub
    --- FAIL: TestB/sub (0.00s)
--- FAIL: TestB (0.01s)
=== RUN   TestC
--- SKIP: TestC (0.00s)
    x_test.go:1: skipping
=== RUN   ExampleD
--- PASS: ExampleD (0.00s)
FAIL
FAIL	pkg/one	0.123s
yolk: boot: noise
=== RUN   TestE
=== PAUSE TestE
=== RUN   TestG
=== PAUSE TestG
=== CONT  TestE
--- PASS: TestE (0.00s)
=== RUN   TestF
panic: test timed out after 1s
FAIL	pkg/two	1.002s
ok  	pkg/three	0.001s
`

func TestParse(t *testing.T) {
	rs, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	run := Index(rs)
	if len(rs) != 3 {
		t.Fatalf("%d packages, want 3", len(rs))
	}
	one := run["pkg/one"]
	want := map[string]Outcome{"TestA": Pass, "TestB": Fail, "TestC": Skip, "ExampleD": Pass}
	for n, o := range want {
		if one.Tests[n] != o {
			t.Errorf("pkg/one %s = %q, want %q", n, one.Tests[n], o)
		}
	}
	if len(one.Tests) != 4 || one.Status != "FAIL" || one.Counts() != (Counts{2, 1, 1}) {
		t.Errorf("pkg/one: %v %q %v", one.Tests, one.Status, one.Counts())
	}
	two := run["pkg/two"]
	if two.Tests["TestF"] != Fail || two.Running != "TestF" || two.Tests["TestE"] != Pass || two.Tests["TestG"] != NotRun {
		t.Errorf("pkg/two: %v running %q", two.Tests, two.Running)
	}
	if run["pkg/three"].Status != "ok" {
		t.Errorf("pkg/three: %+v", run["pkg/three"])
	}
}

func TestCompareAndReasons(t *testing.T) {
	rs, err := ParseReasons(strings.NewReader("# comment\npkg TestSock socket!: httptest\npkg TestBug* bug: a known bug\npkg TestNew@2 socket: only at 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	linux := &Result{Tests: map[string]Outcome{"TestSock": Pass, "TestBug1": Pass, "TestNew": Pass, "TestSame": Fail, "TestSkip": Skip}}
	yolk := &Result{Tests: map[string]Outcome{"TestSock": Fail, "TestBug1": Fail, "TestSame": Fail, "TestSkip": Pass}}
	ds := Compare("pkg", 1, linux, yolk, rs)
	got := map[string]Diff{}
	for _, d := range ds {
		got[d.Test] = d
	}
	if len(ds) != 4 {
		t.Fatalf("diffs %+v", ds)
	}
	if d := got["TestSock"]; !d.Explained || d.AgainstTarget {
		t.Errorf("socket test: %+v", d)
	}
	if d := got["TestBug1"]; !d.Explained || !d.AgainstTarget || d.Reason.Category != "bug" {
		t.Errorf("bug test: %+v", d)
	}
	if d := got["TestNew"]; d.Explained || !d.AgainstTarget || d.Yolk != NotRun {
		t.Errorf("unexplained test: %+v", d)
	}
	if d := got["TestSkip"]; d.AgainstTarget {
		t.Errorf("skip on Linux, pass on yolk counts against: %+v", d)
	}
	if s := rs.Skips("pkg"); len(s) != 1 || s[0] != "TestSock" {
		t.Errorf("skips %q", s)
	}
	if d := Compare("pkg", 2, linux, yolk, rs); len(d) != 4 || !d[1].Explained || d[1].Test != "TestNew" {
		t.Errorf("@2 entry at -smp 2: %+v", d)
	}
	if _, err := ParseReasons(strings.NewReader("pkg TestX no colon\n")); err == nil {
		t.Errorf("a line without category: no error")
	}
}
