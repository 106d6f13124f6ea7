package etc

import (
	"strings"
	"testing"
)

// text is file i as File makes it.
func text(i int, dns [4]byte) (string, string) {
	var b [MaxSize]byte
	path, n := File(i, b[:], dns)
	return path, string(b[:n])
}

// TestEtcFiles: the files' paths and the lines Go's resolver looks for,
// resolv.conf with and without a DNS server, and that every file fits
// MaxSize.
func TestEtcFiles(t *testing.T) {
	seen := map[string]string{}
	for i := 0; i < Files; i++ {
		path, text := text(i, [4]byte{})
		if len(text) >= MaxSize || !strings.HasSuffix(text, "\n") {
			t.Errorf("%s: %d bytes, not ending in a newline, or filling the %d-byte buffer", path, len(text), MaxSize)
		}
		seen[path] = text
	}
	hosts := seen["/etc/hosts"]
	for _, line := range []string{"127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", "127.0.1.1\t" + Nodename} {
		if !strings.Contains(hosts, line+"\n") {
			t.Errorf("/etc/hosts lacks %q:\n%s", line, hosts)
		}
	}
	if r := seen["/etc/resolv.conf"]; strings.Contains(r, "nameserver") {
		t.Errorf("/etc/resolv.conf without a DNS server names one:\n%s", r)
	}
	if !strings.HasPrefix(seen["/etc/nsswitch.conf"], "hosts: files dns\n") {
		t.Errorf("/etc/nsswitch.conf: %q", seen["/etc/nsswitch.conf"])
	}
	for _, line := range strings.Split(strings.TrimSpace(seen["/etc/services"]), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[1], "/tcp") && !strings.HasSuffix(f[1], "/udp") {
			t.Errorf("/etc/services: bad line %q", line)
		}
	}
	for _, want := range []string{"http\t\t80/tcp", "https\t\t443/tcp", "domain\t\t53/udp", "ssh\t\t22/tcp", "smtp\t\t25/tcp"} {
		if !strings.Contains(seen["/etc/services"], want) {
			t.Errorf("/etc/services lacks %q", want)
		}
	}
	for dns, want := range map[[4]byte]string{{10, 0, 2, 3}: "nameserver 10.0.2.3\n", {192, 168, 100, 255}: "nameserver 192.168.100.255\n", {1, 1, 1, 1}: "nameserver 1.1.1.1\n"} {
		if _, r := text(1, dns); r != want {
			t.Errorf("resolv.conf for %v: %q, want %q", dns, r, want)
		}
	}
}

// TestResolvConf: every name server on a line of its own, the search
// list, and without a server the options that bound a lookup.
func TestResolvConf(t *testing.T) {
	var b [MaxSize]byte
	r := Resolv{NS: [MaxNS][4]byte{{169, 254, 169, 254}, {10, 0, 0, 2}}, NNS: 2}
	r.NSearch = copy(r.Search[:], "c.proj.internal google.internal")
	want := "nameserver 169.254.169.254\nnameserver 10.0.0.2\nsearch c.proj.internal google.internal\n"
	if got := string(b[:ResolvConf(b[:], &r)]); got != want {
		t.Errorf("two servers and a search list: %q, want %q", got, want)
	}
	r.NNS = 0
	want = "search c.proj.internal google.internal\noptions timeout:1 attempts:1\n"
	if got := string(b[:ResolvConf(b[:], &r)]); got != want {
		t.Errorf("a search list alone: %q, want %q", got, want)
	}
	full := Resolv{NNS: MaxNS, NSearch: MaxSearch}
	for i := range full.NS {
		full.NS[i] = [4]byte{255, 255, 255, 255}
	}
	for i := range full.Search {
		full.Search[i] = 'a'
	}
	if n := ResolvConf(b[:], &full); n >= MaxSize {
		t.Errorf("the largest resolv.conf is %d bytes: it does not fit MaxSize %d", n, MaxSize)
	}
}
