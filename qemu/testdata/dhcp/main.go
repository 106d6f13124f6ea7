// Command dhcp is the guest of qemu/dhcp_test.go (DHCP as clouds serve
// it): booted without yolk.net on a tap link where dnsmasq answers as
// GCE's metadata server does, it prints what the network service's DHCP
// client configured, as a program sees it — its address and MTU
// (net.Interfaces), its routes (a netlink route dump, printed as `ip
// route` prints them), /etc/resolv.conf — then connects to the host's
// listener at $DHCP_HOST (the tap's host address) and says where it is
// from, and serves TCP on port 8080 ("ping": "pong ADDR"; "echo": every
// byte after the line back until the host closes; "quit": the
// program exits) for the host to see it still serving after the lease
// was renewed.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"yolk/internal/iproute"
	"yolk/netsvc"
)

func main() {
	if !netsvc.Started {
		fmt.Println("dhcp: FAIL: no network service:", netsvc.Err)
		os.Exit(1)
	}
	addr := ""
	ifs, err := net.Interfaces()
	if err != nil {
		fmt.Println("dhcp: FAIL: interfaces:", err)
		os.Exit(1)
	}
	for _, i := range ifs {
		if i.Name != "eth0" {
			continue
		}
		fmt.Printf("dhcp: mtu %d\n", i.MTU)
		as, _ := i.Addrs()
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				addr = n.IP.String()
				fmt.Printf("dhcp: addr %v\n", n)
			}
		}
	}
	routes, err := iproute.Routes()
	if err != nil {
		fmt.Println("dhcp: FAIL: routes:", err)
		os.Exit(1)
	}
	for _, r := range routes {
		fmt.Println("dhcp: route", r)
	}
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		fmt.Println("dhcp: FAIL: resolv.conf:", err)
		os.Exit(1)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fmt.Println("dhcp: resolv", l)
	}
	c, err := net.Dial("tcp", os.Getenv("DHCP_HOST"))
	if err != nil {
		fmt.Println("dhcp: FAIL: dial the host:", err)
		os.Exit(1)
	}
	fmt.Fprintf(c, "hello from %s\n", addr)
	reply, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	fmt.Printf("dhcp: host said %q (%v)\n", strings.TrimSpace(reply), err)
	l, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Println("dhcp: FAIL: listen:", err)
		os.Exit(1)
	}
	fmt.Println("dhcp: serving")
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Println("dhcp: FAIL: accept:", err)
			os.Exit(1)
		}
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		switch strings.TrimSpace(line) {
		case "echo":
			go func() {
				io.Copy(c, br)
				c.Close()
			}()
		case "ping":
			fmt.Fprintf(c, "pong %s\n", addr)
			c.Close()
		case "quit":
			c.Close()
			fmt.Println("dhcp: done")
			os.Exit(0)
		default:
			c.Close()
		}
	}
}
