package queue

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestKernelContext proves the kernel-context claims from the compiler's own
// output for this package (test files excluded): no heap allocation (escape
// analysis moves nothing to the heap), no write barriers (-d=wb), every
// function nosplit, and no call into the runtime at all (no bounds-check
// panics, no morestack, no write barrier, no allocator) — only calls between
// this package's own functions. Exempt: the Error methods, which only format
// an error for a caller, and the compiler's equality functions for the
// package's types, which the package never calls.
func TestKernelContext(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to compile the package with diagnostics")
	}
	cmd := exec.Command(gotool, "build", "-gcflags=yolk/sched/queue=-m -d=wb -S", "yolk/sched/queue")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	text := string(out)
	for _, bad := range []string{"escapes to heap", "moved to heap", "write barrier"} {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, bad) {
				t.Errorf("compiler: %s", line)
			}
		}
	}
	fn := regexp.MustCompile(`^(\S+) STEXT(.*)$`)
	call := regexp.MustCompile(`\s(CALL|JMP)\s+([^\s(]+)\(SB\)`)
	exempt := func(name string) bool {
		switch name {
		case "yolk/sched/queue.Error.Error", "yolk/sched/queue.(*Error).Error":
			return true
		}
		return strings.HasPrefix(name, "type:")
	}
	funcs, cur := 0, ""
	for _, line := range strings.Split(text, "\n") {
		if m := fn.FindStringSubmatch(line); m != nil {
			cur = m[1]
			funcs++
			if !exempt(cur) && !strings.Contains(m[2], "nosplit") {
				t.Errorf("%s is not nosplit", cur)
			}
			continue
		}
		if m := call.FindStringSubmatch(line); m != nil && cur != "" && !exempt(cur) {
			if !strings.HasPrefix(m[2], "yolk/sched/queue.") {
				t.Errorf("%s calls %s", cur, m[2])
			}
		}
	}
	if funcs < 10 {
		t.Fatalf("found %d functions in the compiler output; diagnostics missing?\n%s", funcs, text)
	}
}
