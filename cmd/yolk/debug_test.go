package main

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"yolk/qemu"
)

// TestDebugGDB is "yolk run -gdb" (and make debug) end to end, on both
// architectures: the guest waits halted for a debugger, gdb-multiarch
// attaches with the image's symbols, stops at a breakpoint in main.main,
// reads a package variable and detaches, letting the program finish.
func TestDebugGDB(t *testing.T) {
	gdb, err := exec.LookPath("gdb-multiarch")
	if err != nil {
		t.Fatal("gdb-multiarch not found; install it with: apt-get update && apt-get install -y gdb-multiarch (make test does)")
	}
	tmp := t.TempDir()
	yolk := buildYolk(t)
	app := writeApp(t, tmp, "app", `package main

import "fmt"

var answer = 42

func main() { fmt.Println("answer", answer) }
`)
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			img := filepath.Join(tmp, arch+".elf")
			if out, err := exec.Command(yolk, "build", "-arch", arch, "-o", img, app).CombinedOutput(); err != nil {
				t.Fatalf("yolk build: %v\n%s", err, out)
			}
			port := freePort(t)
			run := exec.Command(yolk, "run", "-accel", "tcg", "-timeout", "2m", "-gdb", fmt.Sprint(port), img)
			var out, errb bytes.Buffer
			run.Stdout, run.Stderr = &out, &errb
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			defer run.Process.Kill()
			if !waitPort(port, 30*time.Second) {
				t.Fatalf("no gdb stub on port %d after 30 s; yolk run said:\n%s", port, errb.String())
			}
			cmd := exec.Command(gdb, "-q", "-batch", "-nx",
				"-ex", fmt.Sprintf("target remote :%d", port),
				"-ex", "break main.main", "-ex", "continue",
				"-ex", "print 'main.answer'", "-ex", "detach", img)
			g, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("gdb: %v\n%s", err, g)
			}
			if err := run.Wait(); err != nil {
				t.Errorf("yolk run -gdb: %v\n%s", err, errb.String())
			}
			for _, want := range []string{"Breakpoint 1, main.main ()", "$1 = 42"} {
				if !strings.Contains(string(g), want) {
					t.Errorf("gdb output lacks %q:\n%s", want, g)
				}
			}
			if want := qemu.GDBCommand(img, port); !strings.Contains(errb.String(), want) {
				t.Errorf("yolk run -gdb did not print %q:\n%s", want, errb.String())
			}
			if !strings.Contains(out.String(), "answer 42") {
				t.Errorf("the program did not finish after gdb continued:\n%s", out.String())
			}
		})
	}
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitPort waits until something accepts connections on port.
func waitPort(port int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return true
		}
	}
	return false
}
