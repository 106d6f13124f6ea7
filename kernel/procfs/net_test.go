package procfs_test

// /proc/net/igmp and igmp6: the text of a fixed snapshot, the host's
// interfaces rendered and compared line by line with the host's own
// files, and both parsed as Go's net.Interface.MulticastAddrs parses
// them (interface_linux.go's parseProcNetIGMP and parseProcNetIGMP6,
// copied below).

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/procfs"
)

func TestIGMPText(t *testing.T) {
	s := fake()
	// A third interface, down and NOARP, with an address whose
	// solicited-node group is eth0's global address's.
	f := procfs.Iface{Index: 5, Flags: unix.IFF_NOARP, NAddr6: 1}
	copy(f.Name[:], "ifb0")
	f.Addr6[0] = [16]byte{0: 0xfd, 15: 1}
	s.AddIface(&f)
	// eth0 again with two addresses of one solicited-node group: one
	// line, two users, where the earlier join (the later address) puts it.
	g := s.Ifaces[1]
	g.Index, g.NAddr6 = 6, 3
	g.Name = [16]byte{'e', 't', 'h', '1'}
	g.Addr6[2] = g.Addr6[1]
	g.Addr6[1] = [16]byte{0: 0xfd, 15: 7}
	s.AddIface(&g)
	grp := fmt.Sprintf("%08X", binary.NativeEndian.Uint32([]byte{224, 0, 0, 1}))
	want := "Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n" +
		"1\tlo        :     1      V3\n\t\t\t\t" + grp + "     1 0:00000000\t\t0\n" +
		"2\teth0      :     1      V3\n\t\t\t\t" + grp + "     1 0:00000000\t\t0\n" +
		"6\teth1      :     1      V3\n\t\t\t\t" + grp + "     1 0:00000000\t\t0\n"
	if got := render(t, s, procfs.ProcRoot, "1/net/igmp"); got != want {
		t.Errorf("igmp:\n%s\nwant:\n%s", got, want)
	}
	want = "" +
		"1    lo              ff020000000000000000000000000001     1 0000000C 0\n" +
		"1    lo              ff010000000000000000000000000001     1 00000008 0\n" +
		"2    eth0            ff0200000000000000000001ffabcdef     2 00000004 0\n" +
		"2    eth0            ff020000000000000000000000000001     1 0000000C 0\n" +
		"2    eth0            ff010000000000000000000000000001     1 00000008 0\n" +
		"5    ifb0            ff020000000000000000000000000001     1 0000000C 0\n" +
		"5    ifb0            ff010000000000000000000000000001     1 00000008 0\n" +
		"6    eth1            ff0200000000000000000001ff000007     1 00000004 0\n" +
		"6    eth1            ff0200000000000000000001ffabcdef     2 00000004 0\n" +
		"6    eth1            ff020000000000000000000000000001     1 0000000C 0\n" +
		"6    eth1            ff010000000000000000000000000001     1 00000008 0\n"
	if got := render(t, s, procfs.ProcRoot, "1/net/igmp6"); got != want {
		t.Errorf("igmp6:\n%s\nwant:\n%s", got, want)
	}
}

// hostIfaces is a snapshot of the host's interfaces: their index, name,
// flags (sysfs's, which have IFF_NOARP) and IPv6 addresses in
// netlink's order; and those interfaces. A host with more than the
// snapshot holds (procfs.MaxIfaces: a tap or a bridge beside lo and
// eth0) has the first ones compared; the others are left out on both
// sides (hostHas).
func hostIfaces(t *testing.T) (*procfs.Snapshot, []net.Interface) {
	ift, err := net.Interfaces()
	if err != nil {
		t.Skipf("host: %v", err)
	}
	s := fake()
	s.NumIfaces = 0 // fake's own interfaces
	var in []net.Interface
	for _, ifi := range ift {
		if len(ifi.Name) > 15 {
			continue
		}
		f := procfs.Iface{Index: int32(ifi.Index)}
		copy(f.Name[:], ifi.Name)
		b, err := os.ReadFile("/sys/class/net/" + ifi.Name + "/flags")
		if err != nil {
			t.Skipf("host: %v", err)
		}
		fl, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 32)
		if err != nil {
			t.Fatalf("%s's flags %q: %v", ifi.Name, b, err)
		}
		f.Flags = uint32(fl)
		addrs, err := ifi.Addrs()
		if err != nil {
			t.Fatalf("%s: %v", ifi.Name, err)
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() == nil && int(f.NAddr6) < len(f.Addr6) {
				f.Addr6[f.NAddr6] = [16]byte(ipn.IP.To16())
				f.NAddr6++
			}
		}
		if !s.AddIface(&f) {
			break
		}
		in = append(in, ifi)
	}
	return s, in
}

// hostHas reports whether interface name is one of ift.
func hostHas(ift []net.Interface, name string) bool {
	return slices.ContainsFunc(ift, func(i net.Interface) bool { return i.Name == name })
}

// TestIGMP6LikeLinux: the host's interfaces rendered give the host's own
// lines for the groups its kernel joins by itself, field by field, but
// for groups whose timer still runs (a report due: flags and timer
// differ). Groups programs joined (users, or groups we do not have) are
// left out.
func TestIGMP6LikeLinux(t *testing.T) {
	s, ift := hostIfaces(t)
	linux := readHost(t, "/proc/net/igmp6")
	hostLine := map[string]string{} // index name group: the line
	for _, l := range strings.Split(strings.TrimSuffix(linux, "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && hostHas(ift, f[1]) {
			hostLine[f[0]+" "+f[1]+" "+f[2]] = l
		}
	}
	mine := render(t, s, procfs.ProcRoot, "1/net/igmp6")
	matched := 0
	for _, l := range strings.Split(strings.TrimSuffix(mine, "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) != 6 {
			t.Fatalf("igmp6 line %q: %d fields", l, len(f))
		}
		h, ok := hostLine[f[0]+" "+f[1]+" "+f[2]]
		if !ok {
			t.Errorf("igmp6: %q; Linux has no such group", l)
			continue
		}
		hf := strings.Fields(h)
		if fl, _ := strconv.ParseUint(hf[4], 16, 32); fl&1 != 0 {
			continue // MAF_TIMER_RUNNING: a report is due
		}
		if l != h {
			t.Errorf("igmp6:\nmine:  %q\nLinux: %q", l, h)
		}
		matched++
	}
	if matched == 0 {
		t.Skipf("no group to compare: mine\n%s\nLinux:\n%s", mine, linux)
	}
	// Every group the host's kernel joins by itself is ours too.
	for k, l := range hostLine {
		g := strings.Fields(k)[2]
		if g == "ff020000000000000000000000000001" || g == "ff010000000000000000000000000001" || strings.HasPrefix(g, "ff0200000000000000000001ff") {
			if !strings.Contains(mine, l[:len("1    lo              ff020000000000000000000000000001")]) {
				t.Errorf("igmp6: Linux has %q, mine not", l)
			}
		}
	}
}

// TestIGMPLikeLinux: each up interface's block as the host's, where the
// host's has the all-hosts group alone; where programs joined more, its
// line and the all-hosts group's.
func TestIGMPLikeLinux(t *testing.T) {
	s, ift := hostIfaces(t)
	linux := readHost(t, "/proc/net/igmp")
	blocks := map[string][]string{} // "index\tname": the interface's lines
	var cur string
	ll := strings.Split(strings.TrimSuffix(linux, "\n"), "\n")
	for _, l := range ll[1:] {
		if !strings.HasPrefix(l, "\t") {
			cur = strings.Join(strings.Fields(strings.SplitN(l, ":", 2)[0]), "\t")
		}
		blocks[cur] = append(blocks[cur], l)
	}
	mine := render(t, s, procfs.ProcRoot, "1/net/igmp")
	ml := strings.Split(strings.TrimSuffix(mine, "\n"), "\n")
	if ml[0] != ll[0] {
		t.Errorf("igmp header:\nmine:  %q\nLinux: %q", ml[0], ll[0])
	}
	if len(ml)%2 != 1 {
		t.Fatalf("igmp: %d lines, want a header and two per interface:\n%s", len(ml), mine)
	}
	for i := 1; i < len(ml); i += 2 {
		key := strings.Join(strings.Fields(strings.SplitN(ml[i], ":", 2)[0]), "\t")
		h, ok := blocks[key]
		if !ok {
			t.Errorf("igmp: %q; Linux has no such interface", ml[i])
			continue
		}
		if len(h) == 2 {
			if ml[i] != h[0] || ml[i+1] != h[1] {
				t.Errorf("igmp:\nmine:  %q\n       %q\nLinux: %q\n       %q", ml[i], ml[i+1], h[0], h[1])
			}
		} else if !slices.Contains(h, ml[i+1]) {
			t.Errorf("igmp %s: Linux has no %q:\n%s", key, ml[i+1], strings.Join(h, "\n"))
		}
	}
	for key := range blocks {
		if f := strings.Split(key, "\t"); len(f) < 2 || !hostHas(ift, f[1]) {
			continue // beyond the snapshot's interfaces
		}
		if !strings.Contains(mine, key+" ") {
			t.Errorf("igmp: Linux has %q, mine not", key)
		}
	}
}

// TestMulticastAddrsParse: what Go's MulticastAddrs makes of our files
// for each of the host's interfaces: the all-hosts group on one that is
// up, ff02::1 and ff01::1 on every one, and no group the host's own
// MulticastAddrs (Linux's files) lacks.
func TestMulticastAddrsParse(t *testing.T) {
	s, ift := hostIfaces(t)
	igmp := render(t, s, procfs.ProcRoot, "1/net/igmp")
	igmp6 := render(t, s, procfs.ProcRoot, "1/net/igmp6")
	for _, ifi := range ift {
		if len(ifi.Name) > 15 {
			continue
		}
		var got []string
		for _, a := range append(parseIGMP(igmp, &ifi), parseIGMP6(igmp6, &ifi)...) {
			got = append(got, a.String())
		}
		for _, g := range []string{"ff02::1", "ff01::1"} {
			if !slices.Contains(got, g) {
				t.Errorf("%s: %v, want %s", ifi.Name, got, g)
			}
		}
		if ifi.Flags&net.FlagUp != 0 && !slices.Contains(got, "224.0.0.1") {
			t.Errorf("%s: %v, want 224.0.0.1", ifi.Name, got)
		}
		host, err := ifi.MulticastAddrs()
		if err != nil {
			t.Fatalf("%s: host's MulticastAddrs: %v", ifi.Name, err)
		}
		var hs []string
		for _, a := range host {
			hs = append(hs, a.String())
		}
		for _, g := range got {
			if !slices.Contains(hs, g) {
				t.Errorf("%s: %s, which the host's MulticastAddrs %v lacks", ifi.Name, g, hs)
			}
		}
	}
}

// parseIGMP is Go's parseProcNetIGMP (net/interface_linux.go) over text.
func parseIGMP(text string, ifi *net.Interface) []net.Addr {
	var ifmat []net.Addr
	var name string
	lines := strings.Split(text, "\n")
	for _, l := range lines[1:] {
		f := strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(" :\r\t\n", r) })
		if len(f) < 4 {
			continue
		}
		switch {
		case l[0] != ' ' && l[0] != '\t':
			name = f[1]
		case len(f[0]) == 8:
			if ifi == nil || name == ifi.Name {
				var b [4]byte
				for i := 0; i+1 < len(f[0]); i += 2 {
					v, _ := strconv.ParseUint(f[0][i:i+2], 16, 8)
					b[i/2] = byte(v)
				}
				i := binary.NativeEndian.Uint32(b[:])
				ifmat = append(ifmat, &net.IPAddr{IP: net.IPv4(byte(i>>24), byte(i>>16), byte(i>>8), byte(i))})
			}
		}
	}
	return ifmat
}

// parseIGMP6 is Go's parseProcNetIGMP6 over text.
func parseIGMP6(text string, ifi *net.Interface) []net.Addr {
	var ifmat []net.Addr
	for _, l := range strings.Split(text, "\n") {
		f := strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(" \r\t\n", r) })
		if len(f) < 6 {
			continue
		}
		if ifi == nil || f[1] == ifi.Name {
			b := make(net.IP, net.IPv6len)
			for i := 0; i+1 < len(f[2]); i += 2 {
				v, _ := strconv.ParseUint(f[2][i:i+2], 16, 8)
				b[i/2] = byte(v)
			}
			ifmat = append(ifmat, &net.IPAddr{IP: b})
		}
	}
	return ifmat
}
