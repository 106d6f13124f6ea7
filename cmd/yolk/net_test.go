package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"yolk/qemu"
)

// TestNetProgram: yolk build links the TCP/IP service into a program
// that uses package net and not into one that does not (or with -netsvc
// off); booted with yolk.net=dhcp the service gets its address from
// QEMU's user network by DHCP and names the DNS server in
// /etc/resolv.conf.
func TestNetProgram(t *testing.T) {
	choice, err := qemu.ChooseAccel(t.Context(), qemu.AccelOptions{Mode: os.Getenv("YOLK_ACCEL"), Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	yolk := buildYolk(t)
	write := func(dir, src string) string { return writeApp(t, tmp, dir, src) }
	netApp := write("netapp", `package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	ifi, err := net.InterfaceByName("eth0")
	if err != nil {
		fmt.Println("eth0:", err)
		os.Exit(1)
	}
	addrs, _ := ifi.Addrs()
	fmt.Println("eth0", addrs)
	b, _ := os.ReadFile("/etc/resolv.conf")
	fmt.Printf("resolv.conf %q\n", b)
}
`)
	plain := write("plain", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n")
	build := func(dir string, extra ...string) string {
		img := filepath.Join(tmp, filepath.Base(dir)+strings.Join(extra, "")+".elf")
		args := append(append([]string{"build"}, extra...), "-o", img, dir)
		if out, err := exec.Command(yolk, args...).CombinedOutput(); err != nil {
			t.Fatalf("yolk %v: %v\n%s", args, err, out)
		}
		return img
	}
	linksNetstack := func(img string) bool {
		out, err := exec.Command("go", "tool", "nm", img).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", img, err)
		}
		return bytes.Contains(out, []byte("gvisor.dev/gvisor/pkg/tcpip/stack."))
	}
	withNet := build(netApp)
	if !linksNetstack(withNet) {
		t.Errorf("a program that uses package net was built without the TCP/IP service")
	}
	if linksNetstack(build(plain)) {
		t.Errorf("a program without package net was built with the TCP/IP service")
	}
	if linksNetstack(build(netApp, "-netsvc=off")) {
		t.Errorf("-netsvc=off linked the TCP/IP service")
	}
	cmd := exec.Command(yolk, "run", "-accel="+choice.Accel, "-timeout=2m", "-e", "yolk.net=dhcp", withNet)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("yolk run: %v\n%s", err, out)
	}
	// The IPv6 address SLAAC gives may or may not have come by the time
	// the program lists eth0's addresses: the IPv4 one comes first.
	for _, want := range []string{"eth0 [10.0.2.15/24", `nameserver 10.0.2.3`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
