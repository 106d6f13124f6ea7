package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestProf is "yolk prof" end to end on amd64: a program spends its time
// in one function for a few seconds and exits 3; yolk prof samples it
// through QEMU's gdb stub, writes a profile whose samples are mostly that
// function called from main.main (frame-pointer stacks, symbolized from
// the image), lets the program finish (its output on stdout, its status
// yolk prof's) — also when the program ends before the samples are all
// taken. And the flags it refuses. Needs QEMU; $YOLK_ACCEL as TestGuest.
func TestProf(t *testing.T) {
	tmp := t.TempDir()
	yolk := buildYolk(t)
	app := writeApp(t, tmp, "app", `package main

import (
	"fmt"
	"os"
	"time"
)

//go:noinline
func spin(n int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

func main() {
	var h uint64
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		h += spin(1 << 18)
	}
	fmt.Println("spun", h != 0)
	os.Exit(3)
}
`)
	img := filepath.Join(tmp, "app.elf")
	if out, err := exec.Command(yolk, "build", "-o", img, app).CombinedOutput(); err != nil {
		t.Fatalf("yolk build: %v\n%s", err, out)
	}
	accel := []string{}
	if a := os.Getenv("YOLK_ACCEL"); a != "" {
		accel = []string{"-accel", a}
	}

	t.Run("usage", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			msg  string
		}{
			{[]string{"-gdb", "1234", img}, "yolk prof attaches to the gdb stub itself"},
			{[]string{"-n", "0", img}, "-n 0: want at least one sample"},
			{[]string{"-interval", "0s", img}, "-interval 0s: want a positive interval"},
			{[]string{}, "usage: yolk prof"},
		} {
			cmd := exec.Command(yolk, append([]string{"prof"}, c.args...)...)
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.msg) {
				t.Errorf("yolk prof %q: %v, status %d, want 2 and %q:\n%s", c.args, err, code, c.msg, out)
			}
		}
	})

	for _, tc := range []struct {
		name string
		n    string
		note string // on stderr
	}{
		{"samples", "40", "yolk prof: wrote 40 samples (40 stops × 1 vCPUs, every 5ms)"},
		{"guest ends first", "100000", "yolk prof: the guest ended after "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cpu.pprof")
			args := append([]string{"prof", "-timeout", "2m", "-delay", "1s", "-n", tc.n, "-o", out}, accel...)
			cmd := exec.Command(yolk, append(args, img)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 3 {
				t.Errorf("status %d, want the program's 3; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "spun true") {
				t.Errorf("the program's output is not on stdout:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.note) {
				t.Errorf("stderr lacks %q:\n%s", tc.note, stderr.String())
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := profile.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			var total, inSpin int64
			for _, s := range p.Sample {
				total += s.Value[0]
				var fns []string
				for _, l := range s.Location {
					for _, ln := range l.Line {
						fns = append(fns, ln.Function.Name)
					}
				}
				if len(fns) >= 2 && fns[0] == "main.spin" && fns[1] == "main.main" {
					inSpin += s.Value[0]
				}
			}
			if total == 0 || inSpin*2 < total {
				t.Errorf("%d of %d samples in main.spin called by main.main, want most:\n%s", inSpin, total, p)
			}
		})
	}
}
