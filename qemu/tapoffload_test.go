package qemu

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTapOffload: behind a tap QEMU's virtio-net offers the offloads,
// the kernel takes them (its NIC line says so): the network service hands
// the device TCP segments of up to 64 KiB with partial checksums, which
// QEMU and the host's kernel cut into frames and complete, and takes the
// host's coalesced segments, across mergeable buffers. 8 MiB echoed by
// the guest (testdata/dhcp's "echo", static address) over IPv4, and 2
// MiB over IPv6 to its link-local address, come back whole, on pc with 2
// CPUs (virtio-net over PCI; the interrupt's harvest and the service's
// lock-free copy out of the ring on different CPUs) and on arm64's virt
// (over MMIO): a segment header the device or the host refused would
// drop the frames and stall the echo, a coalesced frame cut short would
// stall it too. The tap's own counters show the offloads at work: the
// frames that cross it each way average over 3,000 bytes (a frame per
// MTU would be under 1,514). A wrong checksum offset would not
// show here — the host's kernel trusts a partial checksum from a tap as
// it trusts its own (CHECKSUM_PARTIAL) — which is why netsvc's
// TestOffloadEcho has a peer that checks every checksum.
func TestTapOffload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const (
		host  = "10.0.2.2"
		guest = "10.0.2.15"
	)
	if os.Geteuid() != 0 {
		t.Skip("not root: the tap device needs it")
	}
	for i, m := range []struct {
		arch, machine string
		smp           int
	}{{"amd64", "pc", 2}, {"arm64", "virt", 1}} {
		// A tap of its own each: one made again under the same name
		// had no IPv6 route for a while.
		tap := fmt.Sprintf("yolkoffl%d", i)
		// The guest's link-local address, from QEMU's default MAC
		// 52:54:00:12:34:56.
		guest6 := "[fe80::5054:ff:fe12:3456%" + tap + "]"
		t.Run(m.machine, func(t *testing.T) { tapOffload(t, tap, host, guest, guest6, m.arch, m.machine, m.smp) })
	}
}

func tapOffload(t *testing.T, tap, host, guest, guest6, arch, machine string, smp int) {
	tapLink(t, tap, host+"/24")
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // the fixture says hello first
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "ok\n")
	}()
	img := fixtureImage(t, "yolk/qemu/testdata/dhcp", t.TempDir(), arch)
	var (
		serial bytes.Buffer
		smu    sync.Mutex
		once   sync.Once
		errs   = make(chan error, 1)
	)
	var before, after tapStats
	res, err := Run(t.Context(), Config{Image: img, Arch: arch, Machine: machine, SMP: smp,
		Net: NetTap + tap, Env: []string{"yolk.net=" + guest + "/24," + host + ",10.0.2.3", "DHCP_HOST=" + ln.Addr().String()},
		Timeout: 4 * time.Minute,
		Stdout:  &lockedWriter{&smu, &serial}, Stderr: &lockedWriter{&smu, &serial},
		OnLine: func(l string) {
			if l == "dhcp: serving" {
				once.Do(func() {
					go func() {
						before = readTapStats(tap)
						err := echoOver(guest+":8080", 8<<20)
						if err == nil {
							err = echoOver(guest6+":8080", 2<<20)
						}
						after = readTapStats(tap)
						errs <- err
						askLine(guest+":8080", "quit")
					}()
				})
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	smu.Lock()
	console := serial.String()
	smu.Unlock()
	if !strings.Contains(console, "transmit offloads (checksum, TSO), receive offloads (checksum, coalesced TCP)") {
		t.Errorf("the NIC did not take the offloads behind the tap (its line does not name them)\nconsole:\n%s", console)
	}
	select {
	case err := <-errs:
		if err != nil {
			t.Fatalf("echo: %v (exit %d, timed out %v)\nconsole:\n%s", err, res.ExitCode, res.TimedOut, console)
		}
	default:
		t.Fatalf("the guest never served (exit %d, timed out %v)\nconsole:\n%s", res.ExitCode, res.TimedOut, console)
	}
	// rx: what the guest sent; tx: what the host sent it.
	for _, d := range []struct {
		way           string
		bytes, frames uint64
	}{{"guest to host", after.rxBytes - before.rxBytes, after.rxPackets - before.rxPackets},
		{"host to guest", after.txBytes - before.txBytes, after.txPackets - before.txPackets}} {
		t.Logf("%s: %d bytes in %d frames over the tap", d.way, d.bytes, d.frames)
		if d.frames == 0 || d.bytes/d.frames < 3000 {
			t.Errorf("%s: %d bytes in %d frames: no segments larger than a frame crossed the tap", d.way, d.bytes, d.frames)
		}
	}
}

// tapStats are a network device's counters, as the host's kernel keeps
// them.
type tapStats struct{ rxBytes, rxPackets, txBytes, txPackets uint64 }

func readTapStats(dev string) tapStats {
	get := func(name string) uint64 {
		b, _ := os.ReadFile("/sys/class/net/" + dev + "/statistics/" + name)
		v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v
	}
	return tapStats{get("rx_bytes"), get("rx_packets"), get("tx_bytes"), get("tx_packets")}
}

// echoOver sends n random bytes to the fixture's echo at addr and checks
// what comes back, within two minutes.
func echoOver(addr string, n int) error {
	var c net.Conn
	var err error
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// The host's own link-local address stays tentative for its
		// duplicate address detection (a second or two) after the tap
		// came up: until then it cannot be a source.
		if c, err = net.DialTimeout("tcp", addr, 10*time.Second); err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	msg := make([]byte, n)
	rand.New(rand.NewSource(int64(n))).Read(msg)
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(append([]byte("echo\n"), msg...))
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("%s: read after %d of %d bytes: %v", addr, len(got), n, err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("%s: write: %v", addr, err)
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("%s: %d bytes came back of %d, not the bytes sent", addr, len(got), n)
	}
	return nil
}
