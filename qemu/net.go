package qemu

import (
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// The guest's network (Config.Net): none, QEMU's user network (slirp: the
// guest is 10.0.2.15/24 behind a gateway and DHCP server at 10.0.2.2, DNS
// at 10.0.2.3; the host's ports reach the guest only through Forwards), or
// a tap interface the host set up. The device is virtio-net: over
// virtio-mmio version 2 on microvm and virt, modern-only PCI on pc and
// q35. The Raspberry Pi 3 board has no NIC.

// Networks Config.Net takes ("" is "none"; "tap:IFNAME" names the
// interface).
const (
	NetNone = "none"
	NetUser = "user"
	NetTap  = "tap:"
)

// UserNetConf is the kernel option that gives the guest QEMU's user
// network's address, gateway and DNS server (kernel/cmdline): added to
// the command line of -kernel boots with Net "user" unless Env has a
// yolk.net of its own.
const UserNetConf = "yolk.net=10.0.2.15/24,10.0.2.2,10.0.2.3"

// TestNetConf is UserNetConf without the DNS server, for test boots
// (yolk test, TestGuest): slirp's DNS forwards to the host's resolver,
// which tests must not reach; without a nameserver in resolv.conf a name
// outside /etc/hosts fails at once (Go tries 127.0.0.1:53).
const TestNetConf = "yolk.net=10.0.2.15/24,10.0.2.2"

// Forward is a host port forwarded to the guest on the user network.
type Forward struct {
	UDP       bool
	HostAddr  string // the host address it listens on: 127.0.0.1 unless asked otherwise
	HostPort  int
	GuestPort int
}

func (f Forward) String() string {
	s := fmt.Sprintf("%s:%d:%d", f.HostAddr, f.HostPort, f.GuestPort)
	if f.UDP {
		s += "/udp"
	}
	return s
}

// ParseForward parses [HOSTADDR:]HOSTPORT:GUESTPORT[/udp|/tcp] (HOSTADDR
// an IPv4 address, default 127.0.0.1: a forward listens on every host
// interface only when asked to, with 0.0.0.0).
func ParseForward(s string) (Forward, error) {
	var f Forward
	spec := s
	if rest, proto, ok := strings.Cut(spec, "/"); ok {
		switch proto {
		case "udp":
			f.UDP = true
		case "tcp":
		default:
			return f, fmt.Errorf("port forward %q: protocol %q, want tcp or udp", s, proto)
		}
		spec = rest
	}
	parts := strings.Split(spec, ":")
	f.HostAddr = "127.0.0.1"
	switch len(parts) {
	case 2:
	case 3:
		a, err := netip.ParseAddr(parts[0])
		if err != nil || !a.Is4() {
			return f, fmt.Errorf("port forward %q: host address %q: want an IPv4 address", s, parts[0])
		}
		f.HostAddr = a.String()
		parts = parts[1:]
	default:
		return f, fmt.Errorf("port forward %q: want [HOSTADDR:]HOSTPORT:GUESTPORT[/udp]", s)
	}
	var err error
	if f.HostPort, err = port(parts[0]); err != nil {
		return f, fmt.Errorf("port forward %q: host port: %v", s, err)
	}
	if f.GuestPort, err = port(parts[1]); err != nil {
		return f, fmt.Errorf("port forward %q: guest port: %v", s, err)
	}
	return f, nil
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q: want 1 to 65535", s)
	}
	return p, nil
}

// CheckNet reports an error unless net is a network Config.Net takes.
func CheckNet(net string) error {
	switch {
	case net == "", net == NetNone, net == NetUser:
		return nil
	case strings.HasPrefix(net, NetTap):
		name := strings.TrimPrefix(net, NetTap)
		if name == "" || len(name) > 15 || strings.ContainsAny(name, ",= /") {
			return fmt.Errorf("network %q: want tap:IFNAME with an interface name", net)
		}
		return nil
	}
	return fmt.Errorf("network %q: want user, none or tap:IFNAME", net)
}

// netArgs are the QEMU arguments giving the guest net with forwards fwds
// (user only) on a machine whose virtio devices are PCI (pc, q35) or
// virtio-mmio; none for no network.
func netArgs(net string, fwds []Forward, pci bool) ([]string, error) {
	if err := CheckNet(net); err != nil {
		return nil, err
	}
	if len(fwds) > 0 && net != NetUser {
		return nil, fmt.Errorf("port forwards need the user network, not %q", cmpNone(net))
	}
	var netdev string
	switch {
	case net == "" || net == NetNone:
		return nil, nil
	case net == NetUser:
		netdev = "user,id=net0"
		for _, f := range fwds {
			proto := "tcp"
			if f.UDP {
				proto = "udp"
			}
			netdev += fmt.Sprintf(",hostfwd=%s:%s:%d-:%d", proto, f.HostAddr, f.HostPort, f.GuestPort)
		}
	default:
		netdev = "tap,id=net0,ifname=" + strings.TrimPrefix(net, NetTap) + ",script=no,downscript=no"
	}
	if pci {
		// Modern only (device 0x1041), and no option ROM: the
		// kernel needs no network boot firmware.
		return []string{"-netdev", netdev, "-device", "virtio-net-pci,netdev=net0,disable-legacy=on,romfile="}, nil
	}
	// QEMU's virtio-mmio transports are legacy (version 1) by default;
	// the kernel speaks version 2.
	return []string{"-global", "virtio-mmio.force-legacy=false", "-netdev", netdev, "-device", "virtio-net-device,netdev=net0"}, nil
}

func cmpNone(net string) string {
	if net == "" {
		return NetNone
	}
	return net
}

// withNetConf adds UserNetConf to env for the user network unless env
// sets yolk.net itself.
func withNetConf(env []string, net string) []string {
	if net != NetUser || slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "yolk.net=") }) {
		return env
	}
	return append(slices.Clone(env), UserNetConf)
}

// TapRouteTaken is a route of the host's that matches hostCIDR's address
// (the host's end of a tap link about to be made, IPv4) at least as
// specifically as hostCIDR's prefix, as a tap left by hand on the same
// subnet has; "" if there is none (or no ip command to ask). Such a
// route would take the traffic meant for the new link: the guest would
// never hear the host.
func TapRouteTaken(hostCIDR string) string {
	addr, p, _ := strings.Cut(hostCIDR, "/")
	prefix, err := strconv.Atoi(p)
	if err != nil {
		prefix = 32
	}
	out, err := exec.Command("ip", "-4", "route", "show", "to", "match", addr).Output()
	if err != nil {
		return ""
	}
	return routeAtLeast(string(out), prefix)
}

// routeAtLeast is the first of routes (ip route's lines) other than the
// default whose prefix is at least prefix bits long; "" if none.
func routeAtLeast(routes string, prefix int) string {
	for _, l := range strings.Split(routes, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "default" {
			continue
		}
		bits := 32
		if _, b, ok := strings.Cut(f[0], "/"); ok {
			bits, _ = strconv.Atoi(b)
		}
		if bits >= prefix {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
