package qemu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPowerButton: QEMU's system_powerdown (a cloud's "stop") is the
// power button — ACPI's fixed-feature button on q35, the Generic Event
// Device on microvm (hardware-reduced ACPI) and on Cloud Hypervisor's
// shape, the PL061 GPIO key on arm64 virt — which the kernel turns into
// SIGTERM for the program. The program catches it, writes a file to a
// share (on Cloud Hypervisor's shape, which has none, to its own file
// system) and exits 0; the machine, which
// has no exit device here (NoExitDevice), powers off (ACPI S5 through
// PM1a control or the sleep control register, PSCI SYSTEM_OFF) and QEMU
// exits. A program that does not catch SIGTERM dies of it (143) and the
// machine powers off too.
func TestPowerButton(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots images")
	}
	needQEMU(t)
	const pkg = "yolk/qemu/testdata/powerdown"
	dir := t.TempDir()
	images := map[string]string{}
	for _, c := range []struct {
		arch, machine string
		nocatch       bool
	}{
		{"amd64", "microvm", false},
		{"amd64", "q35", false},
		{"amd64", CloudHypervisor, false},
		{"arm64", "virt", false},
		{"amd64", "microvm", true},
	} {
		name := c.machine
		if c.nocatch {
			name += "/nocatch"
		}
		t.Run(name, func(t *testing.T) {
			if c.arch == "arm64" {
				if _, err := FindQEMUFor("arm64"); err != nil {
					t.Skip(err)
				}
			}
			img := images[c.arch]
			if img == "" {
				img = fixtureImage(t, pkg, dir, c.arch)
				images[c.arch] = img
			}
			share := t.TempDir()
			sock := filepath.Join(t.TempDir(), "qmp")
			var serial bytes.Buffer
			type outcome struct {
				reason string
				err    error
			}
			sent := make(chan outcome, 1)
			cfg := Config{Image: img, Arch: c.arch, Machine: c.machine, Timeout: 3 * time.Minute, NoExitDevice: true,
				Env:    []string{"POWERDOWN_DIR=/share"},
				Shares: []Share{{HostDir: share, GuestPath: "/share"}},
				Extra:  []string{"-qmp", "unix:" + sock + ",server=on,wait=off"},
				Stdout: &serial, Stderr: &serial,
				OnLine: func(line string) {
					if strings.Contains(line, "powerdown: ready") {
						go func() {
							r, err := qmpPowerdown(sock)
							sent <- outcome{r, err}
						}()
					}
				},
			}
			if c.nocatch {
				cfg.Args = []string{"nocatch"}
			}
			if vmmMachine(c.machine) {
				cfg.Env, cfg.Shares = nil, nil // the file at /stopped
			}
			start := time.Now()
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var how outcome
			select {
			case how = <-sent:
				if how.err != nil {
					t.Fatalf("QMP: %v\n%s", how.err, serial.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the program never said it was ready, or QMP hung (exit %d, %v)\n%s", res.ExitCode, res.Messages, serial.String())
			}
			if how.reason != "guest-shutdown" {
				t.Errorf("QEMU's SHUTDOWN event says %q, want guest-shutdown (a power-off, not a reset)", how.reason)
			}
			want := 0
			if c.nocatch {
				want = 143
			}
			if res.TimedOut || res.ExitCode != want || res.Mismatch != "" || res.QEMUStatus != 0 {
				t.Fatalf("exit %d (QEMU %d, timed out %v, %v), want %d and QEMU's 0\n%s", res.ExitCode, res.QEMUStatus, res.TimedOut, res.Messages, want, serial.String())
			}
			if !strings.Contains(serial.String(), "power button: SIGTERM") {
				t.Errorf("no power-button line\n%s", serial.String())
			}
			if vmmMachine(c.machine) {
				if !strings.Contains(serial.String(), "powerdown: file written, exiting") {
					t.Errorf("the program did not write its file\n%s", serial.String())
				}
			} else {
				b, err := os.ReadFile(filepath.Join(share, "stopped"))
				switch {
				case c.nocatch && err == nil:
					t.Errorf("the program that did not catch SIGTERM wrote %q", b)
				case !c.nocatch && string(b) != "stopped cleanly\n":
					t.Errorf("the share's file: %q, %v\n%s", b, err, serial.String())
				}
			}
			t.Logf("%s: QEMU start to its exit %v", name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// qmpPowerdown connects to QEMU's QMP socket at path, presses the power
// button (system_powerdown) and returns the reason of the SHUTDOWN event
// that follows (qmpShutdown).
func qmpPowerdown(path string) (string, error) { return qmpShutdown(path, "system_powerdown") }

// qmpShutdown connects to QEMU's QMP socket at path, leaves the
// capabilities negotiation, runs the commands (each without arguments)
// and returns the reason of the SHUTDOWN event that follows
// ("guest-shutdown" for ACPI S5 or PSCI SYSTEM_OFF, "guest-reset" for a
// reset under -no-reboot).
func qmpShutdown(path string, cmds ...string) (string, error) {
	var conn net.Conn
	var err error
	for i := 0; i < 50; i++ {
		if conn, err = net.Dial("unix", path); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	r := bufio.NewReader(conn)
	// next reads messages up to a reply (or the greeting) or, with
	// event set, up to that event, whose data it returns.
	next := func(event string) (json.RawMessage, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			var m struct {
				QMP    json.RawMessage
				Return json.RawMessage
				Error  json.RawMessage
				Event  string
				Data   json.RawMessage
			}
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			switch {
			case m.Error != nil:
				return nil, fmt.Errorf("%s", m.Error)
			case event == "" && (m.Return != nil || m.QMP != nil):
				return nil, nil
			case event != "" && m.Event == event:
				return m.Data, nil
			}
		}
	}
	if _, err := next(""); err != nil { // the greeting
		return "", err
	}
	for _, c := range append([]string{"qmp_capabilities"}, cmds...) {
		if _, err := fmt.Fprintf(conn, "{\"execute\":%q}\n", c); err != nil {
			return "", err
		}
		if _, err := next(""); err != nil {
			return "", fmt.Errorf("%s: %w", c, err)
		}
	}
	data, err := next("SHUTDOWN")
	if err != nil {
		return "", fmt.Errorf("waiting for SHUTDOWN: %w", err)
	}
	var d struct{ Reason string }
	json.Unmarshal(data, &d)
	return d.Reason, nil
}
