package qemu

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestForceSigBlocked: a fault whose signal the thread blocks ends the
// process with 128+SIGSEGV, as Linux's force_sig (each way is run first on
// the host: the reference), instead of entering the Go handler again (the
// old behaviour: a Go panic, or for the bad rt_sigreturn frame faults
// nested in the handler, status 2 or 4).
func TestForceSigBlocked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const pkg = "yolk/qemu/testdata/forcesig"
	dir := t.TempDir()
	host, img := fixtureHost(t, pkg, dir), fixtureImage(t, pkg, dir, "")
	for _, args := range [][]string{nil, {"sigreturn"}} {
		out, err := exec.Command(host, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSEGV {
			t.Errorf("forcesig %q on the host: %v, want death by SIGSEGV\n%s", args, err, out)
			continue
		}
		var serial bytes.Buffer
		res, err := Run(t.Context(), Config{Image: img, Args: args, Machine: "microvm", Timeout: 2 * time.Minute, Stdout: &serial, Stderr: &serial})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 128+int(syscall.SIGSEGV) || !strings.Contains(serial.String(), "yolk: killed by signal 11") ||
			strings.Contains(serial.String(), "still running") {
			t.Errorf("forcesig %q: exit %d, want 139 and \"killed by signal 11\":\n%s", args, res.ExitCode, serial.String())
		}
	}
}
