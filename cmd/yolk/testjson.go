package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// lazyTest2JSON is go's own test2json converter (go tool test2json -p PKG
// -t), started at the first write, over a package's output and go test's
// result line: the events go test -json gives. Close ends its input and
// waits for its last event.
type lazyTest2JSON struct {
	ctx context.Context
	pkg string
	w   io.Writer

	mu    sync.Mutex
	cmd   *exec.Cmd
	stdin io.WriteCloser
	err   error
}

func (l *lazyTest2JSON) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cmd == nil && l.err == nil {
		l.cmd = exec.CommandContext(l.ctx, "go", "tool", "test2json", "-p", l.pkg, "-t")
		l.cmd.Stdout = l.w
		l.cmd.Stderr = os.Stderr
		if l.stdin, l.err = l.cmd.StdinPipe(); l.err == nil {
			l.err = l.cmd.Start()
		}
		if l.err != nil {
			l.err = fmt.Errorf("go tool test2json: %w", l.err)
			fmt.Fprintf(os.Stderr, "yolk test: %v\n", l.err)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.stdin.Write(b)
}

func (l *lazyTest2JSON) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cmd == nil || l.err != nil {
		return l.err
	}
	l.stdin.Close()
	return l.cmd.Wait()
}

// event is test2json's event, in its field order.
type event struct {
	Time        *time.Time `json:",omitempty"`
	Action      string
	Package     string   `json:",omitempty"`
	Elapsed     *float64 `json:",omitempty"`
	Output      *string  `json:",omitempty"`
	FailedBuild string   `json:",omitempty"`
}

// buildEvent is go build -json's event (go help buildjson).
type buildEvent struct {
	ImportPath string
	Action     string
	Output     string `json:",omitempty"`
}

// writeBuildEvents writes a failed build's log as go test -json does:
// one build-output event a line, then build-fail, for the build id.
func writeBuildEvents(w io.Writer, id, log string) {
	enc := json.NewEncoder(w)
	for _, l := range strings.SplitAfter(log, "\n") {
		if l != "" {
			enc.Encode(buildEvent{ImportPath: id, Action: "build-output", Output: l})
		}
	}
	enc.Encode(buildEvent{ImportPath: id, Action: "build-fail"})
}

// writeFailEvents writes the test events of a package whose test binary
// was never run: start, its one line of output, and fail naming the failed
// build.
func writeFailEvents(w io.Writer, pkg, output, failedBuild string) {
	enc := json.NewEncoder(w)
	now := func() *time.Time { t := time.Now(); return &t }
	zero := 0.0
	enc.Encode(event{Time: now(), Action: "start", Package: pkg})
	enc.Encode(event{Time: now(), Action: "output", Package: pkg, Output: &output})
	enc.Encode(event{Time: now(), Action: "fail", Package: pkg, Elapsed: &zero, FailedBuild: failedBuild})
}

var coverageLine = regexp.MustCompile(`coverage: (.*)\n`)

// coverage is what go test appends to a package's ok line with -cover:
// the test binary's "coverage: N% of statements".
func coverage(c *testConfig, out []byte) string {
	if !c.cover {
		return ""
	}
	m := coverageLine.FindSubmatch(bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n")))
	if m == nil {
		return ""
	}
	return "\tcoverage: " + string(m[1])
}

// bootNoteFilter drops the kernel's routine notes ("yolk: boot: ...",
// "yolk: exit 0") from the guest's output on its way to test2json, so that
// the events are the test binary's as go test -json gives them; faults,
// warnings and everything else pass.
type bootNoteFilter struct {
	w    io.Writer
	line []byte
}

var bootNote = regexp.MustCompile(`^yolk: ((boot|initrd|net|share|smp|gic|tsc|bss|console|etc): |exit [0-9]+\r?\n?$)`)

func (f *bootNoteFilter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			f.line = append(f.line, b...)
			break
		}
		f.line = append(f.line, b[:i+1]...)
		b = b[i+1:]
		if !bootNote.Match(f.line) {
			if _, err := f.w.Write(f.line); err != nil {
				return 0, err
			}
		}
		f.line = f.line[:0]
	}
	return n, nil
}

// Flush writes an unterminated last line.
func (f *bootNoteFilter) Flush() {
	if len(f.line) > 0 && !bootNote.Match(f.line) {
		f.w.Write(f.line)
	}
	f.line = nil
}
