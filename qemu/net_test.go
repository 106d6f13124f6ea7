package qemu

import (
	"slices"
	"strings"
	"testing"
)

func TestParseForward(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Forward
		err  string
	}{
		{"8080:80", Forward{HostAddr: "127.0.0.1", HostPort: 8080, GuestPort: 80}, ""},
		{"8080:80/tcp", Forward{HostAddr: "127.0.0.1", HostPort: 8080, GuestPort: 80}, ""},
		{"5353:53/udp", Forward{UDP: true, HostAddr: "127.0.0.1", HostPort: 5353, GuestPort: 53}, ""},
		{"0.0.0.0:8080:80", Forward{HostAddr: "0.0.0.0", HostPort: 8080, GuestPort: 80}, ""},
		{"192.168.1.2:1:65535/udp", Forward{UDP: true, HostAddr: "192.168.1.2", HostPort: 1, GuestPort: 65535}, ""},
		{"80", Forward{}, "want [HOSTADDR:]HOSTPORT:GUESTPORT"},
		{"a:b:c:d", Forward{}, "want [HOSTADDR:]HOSTPORT:GUESTPORT"},
		{"0:80", Forward{}, "host port"},
		{"8080:65536", Forward{}, "guest port"},
		{"8080:80/sctp", Forward{}, "protocol"},
		{"::1:8080:80", Forward{}, "want [HOSTADDR:]HOSTPORT:GUESTPORT"},
		{"example.com:8080:80", Forward{}, "IPv4"},
	} {
		got, err := ParseForward(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseForward(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseForward(%q) error %v, want one saying %q", c.in, err, c.err)
		}
	}
}

// TestQEMUArgsNet: the network device and backend each machine gets,
// the forwards (on 127.0.0.1 unless asked), the address on the command
// line for the user network, and the refusals.
func TestQEMUArgsNet(t *testing.T) {
	mmio := []string{"-global", "virtio-mmio.force-legacy=false", "-netdev", "user,id=net0", "-device", "virtio-net-device,netdev=net0"}
	pci := []string{"-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0,disable-legacy=on,romfile="}
	fwd := []Forward{{HostAddr: "127.0.0.1", HostPort: 8080, GuestPort: 80}, {UDP: true, HostAddr: "0.0.0.0", HostPort: 5353, GuestPort: 53}}
	for _, c := range []struct {
		name     string
		c        Config
		want     []string // a contiguous run of the arguments
		cmdline  bool     // the -append line carries UserNetConf
		noNet    bool     // no -netdev at all
		errMatch string
	}{
		{name: "microvm", c: Config{Arch: "amd64", Machine: "microvm", Net: "user"}, want: mmio, cmdline: true},
		{name: "default machine", c: Config{Arch: "amd64", Net: "user"}, want: mmio, cmdline: true},
		{name: "pc", c: Config{Arch: "amd64", Machine: "pc", Net: "user"}, want: pci, cmdline: true},
		{name: "q35", c: Config{Arch: "amd64", Machine: "q35", Net: "user"}, want: pci, cmdline: true},
		{name: "virt", c: Config{Arch: "arm64", Machine: "virt", Net: "user"}, want: mmio, cmdline: true},
		{name: "virt-gicv3", c: Config{Arch: "arm64", Machine: "virt-gicv3", Net: "user"}, want: mmio, cmdline: true},
		{name: "none", c: Config{Arch: "amd64", Net: "none"}, noNet: true},
		{name: "empty is none", c: Config{Arch: "arm64"}, noNet: true},
		{name: "own yolk.net", c: Config{Arch: "amd64", Net: "user", Env: []string{"yolk.net=192.168.7.2/24,192.168.7.1"}}, want: mmio},
		{name: "forwards", c: Config{Arch: "amd64", Machine: "q35", Net: "user", Forwards: fwd},
			want: []string{"-netdev", "user,id=net0,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=udp:0.0.0.0:5353-:53"}, cmdline: true},
		{name: "tap", c: Config{Arch: "amd64", Net: "tap:tap0"},
			want: []string{"-netdev", "tap,id=net0,ifname=tap0,script=no,downscript=no", "-device", "virtio-net-device,netdev=net0"}},
		{name: "pc board", c: Config{Board: "pc", Net: "user"}, want: pci},
		{name: "bad net", c: Config{Arch: "amd64", Net: "bridge"}, errMatch: "want user, none or tap:IFNAME"},
		{name: "bad tap", c: Config{Arch: "amd64", Net: "tap:a,b"}, errMatch: "tap:IFNAME"},
		{name: "forwards without user", c: Config{Arch: "amd64", Net: "none", Forwards: fwd}, errMatch: "user network"},
		{name: "rpi3", c: Config{Board: "rpi3", Net: "user"}, errMatch: "no network device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.c
			cfg.Image = "app.elf"
			if cfg.Board == "pc" {
				cfg.Image = "app.iso"
			}
			args, err := QEMUArgs(cfg)
			if c.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), c.errMatch) {
					t.Fatalf("error %v, want one saying %q", err, c.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.noNet {
				if slices.Contains(args, "-netdev") || slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "virtio-net") || strings.Contains(a, "yolk.net") }) {
					t.Errorf("args %q: want no network", args)
				}
				return
			}
			if !containsRun(args, c.want) {
				t.Errorf("args %q: want the run %q", args, c.want)
			}
			i := slices.Index(args, "-append")
			got := i >= 0 && strings.Contains(args[i+1], UserNetConf)
			if got != c.cmdline {
				t.Errorf("args %q: UserNetConf on the command line %v, want %v", args, got, c.cmdline)
			}
			if n := strings.Count(strings.Join(args, " "), "yolk.net="); c.name == "own yolk.net" && n != 1 {
				t.Errorf("args %q: %d yolk.net options, want the Env's only", args, n)
			}
		})
	}
}

// containsRun reports whether want appears in args as consecutive
// elements.
func containsRun(args, want []string) bool {
	for i := 0; i+len(want) <= len(args); i++ {
		if slices.Equal(args[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

// A route to the tap's subnet as specific as the tap's, or more, is taken;
// the default route and wider ones are not.
func TestRouteAtLeast(t *testing.T) {
	routes := "default via 192.0.2.1 dev eth0 \n10.0.0.0/8 dev br0 scope link \n10.0.2.0/24 dev yprof0 proto kernel scope link src 10.0.2.2 linkdown \n"
	for _, c := range []struct {
		routes string
		prefix int
		want   string
	}{
		{routes, 24, "10.0.2.0/24 dev yprof0 proto kernel scope link src 10.0.2.2 linkdown"},
		{routes, 25, ""},
		{routes, 8, "10.0.0.0/8 dev br0 scope link"},
		{"default via 192.0.2.1 dev eth0\n", 0, ""},
		{"10.0.2.2 dev tap9 scope link\n", 24, "10.0.2.2 dev tap9 scope link"}, // a host route
		{"", 24, ""},
	} {
		if got := routeAtLeast(c.routes, c.prefix); got != c.want {
			t.Errorf("routeAtLeast(%q, %d) = %q, want %q", c.routes, c.prefix, got, c.want)
		}
	}
}
