package qemu

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// TestTapEarlyFrames: frames that reach the NIC before the kernel routes
// its interrupt — a Linux host's IPv6 router solicitations on a fresh tap
// do, and here the host also broadcasts a UDP datagram every 20 ms from
// before the boot — must not leave the NIC deaf. On pc (virtio-net over
// PCI, INTx through the I/O APIC) they did: the device raised its
// level-triggered line between DRIVER_OK and the I/O APIC entry being
// written, QEMU's I/O APIC ignored the rise on the still edge-mode,
// masked pin, and the line, high from then on, never rose again: no
// frame was received after (kernel/virtio.go, virtioCatchUp). The guest
// (testdata/dhcp, with a static address) connects to the host and then
// serves TCP, which the host checks.
func TestTapEarlyFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	const (
		tap   = "yolkearly0"
		host  = "10.0.2.2"
		guest = "10.0.2.15"
	)
	if os.Geteuid() != 0 {
		t.Skip("not root: the tap device needs it")
	}
	tapLink(t, tap, host+"/24") // IPv6 left on: the host's own early frames too
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "ok\n")
	}()
	// Broadcast frames from before the boot to the end (no ARP needed).
	bc, err := net.ListenPacket("udp4", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	stop := make(chan struct{})
	var sent sync.WaitGroup
	sent.Add(1)
	go func() {
		defer sent.Done()
		to := &net.UDPAddr{IP: net.IPv4(10, 0, 2, 255), Port: 9}
		for {
			bc.WriteTo([]byte("early"), to)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); sent.Wait() }()
	time.Sleep(200 * time.Millisecond)

	img := fixtureImage(t, "yolk/qemu/testdata/dhcp", t.TempDir(), "amd64")
	var (
		serial bytes.Buffer
		smu    sync.Mutex
		once   sync.Once
		answer = make(chan string, 1)
		askErr error
	)
	res, err := Run(t.Context(), Config{Image: img, Arch: "amd64", Machine: "pc", SMP: 1,
		Net: NetTap + tap, Env: []string{"yolk.net=" + guest + "/24," + host + ",10.0.2.3", "DHCP_HOST=" + ln.Addr().String()},
		Timeout: 2 * time.Minute,
		Stdout:  &lockedWriter{&smu, &serial}, Stderr: &lockedWriter{&smu, &serial},
		OnLine: func(l string) {
			if l == "dhcp: serving" {
				once.Do(func() {
					go func() {
						var r string
						r, askErr = askLine(guest+":8080", "ping")
						answer <- r
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
	select {
	case r := <-answer:
		if askErr != nil || r != "pong "+guest {
			t.Fatalf("the guest's answer: %q, %v\nconsole:\n%s", r, askErr, console)
		}
	default:
		t.Fatalf("the guest never served (exit %d, timed out %v): its NIC heard nothing after the early frames\nconsole:\n%s", res.ExitCode, res.TimedOut, console)
	}
}
