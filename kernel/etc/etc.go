// Package etc is the text of the files under /etc that Go's resolver and
// lookups read (net's hosts, DNS, service and protocol lookups), which
// the kernel makes at boot before the boot archive is unpacked (an
// archive's own file replaces one):
//
//   - hosts: localhost on 127.0.0.1 and ::1, and the node name (uname's,
//     Nodename) on 127.0.1.1 as Debian gives it, so the program can look
//     itself up.
//   - resolv.conf: the DNS server the command line's yolk.net names
//     (ResolvConf's form, which the network service writes DHCP's in).
//     Without one, no nameserver line: Go's resolver then asks
//     127.0.0.1:53 and [::1]:53, where nothing answers (no socket, or
//     port unreachable); "timeout:1 attempts:1" bounds a lookup at about
//     a second should packets be lost instead.
//   - nsswitch.conf: hosts from files, then DNS (Go reads /etc/hosts
//     first).
//   - services, protocols: the well-known names, short.
//   - passwd, group: root (the one process's user and group, home /root,
//     which the kernel makes too) and nobody, so that os/user finds the
//     user the program runs as.
//
// Kernel-context Go: it only copies constant text into the caller's
// buffer; it may not allocate, and it reaches nothing of the kernel.
package etc

// Nodename is uname's nodename and /etc/hosts's name for 127.0.1.1.
const Nodename = "yolk"

// Files is how many files File makes; MaxSize bounds each one's length.
const (
	Files   = 7
	MaxSize = 1024
)

const (
	hosts = "127.0.0.1\tlocalhost\n" +
		"127.0.1.1\t" + Nodename + "\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"ff02::1\tip6-allnodes\n" +
		"ff02::2\tip6-allrouters\n"
	resolvNone    = "# No DNS server: yolk.net=ADDR/PREFIX,GATEWAY,DNS names one.\n" + resolvOptions
	resolvOptions = "options timeout:1 attempts:1\n"
	resolv        = "nameserver "
	nsswitch      = "hosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n"
	services      = "ftp-data\t20/tcp\n" +
		"ftp\t\t21/tcp\n" +
		"ssh\t\t22/tcp\n" +
		"telnet\t\t23/tcp\n" +
		"smtp\t\t25/tcp\t\tmail\n" +
		"domain\t\t53/tcp\n" +
		"domain\t\t53/udp\n" +
		"bootps\t\t67/udp\n" +
		"bootpc\t\t68/udp\n" +
		"tftp\t\t69/udp\n" +
		"http\t\t80/tcp\t\twww\n" +
		"pop3\t\t110/tcp\t\tpop-3\n" +
		"ntp\t\t123/udp\n" +
		"imap2\t\t143/tcp\t\timap\n" +
		"snmp\t\t161/tcp\n" +
		"snmp\t\t161/udp\n" +
		"ldap\t\t389/tcp\n" +
		"https\t\t443/tcp\n" +
		"https\t\t443/udp\n" +
		"submissions\t465/tcp\t\tssmtp smtps\n" +
		"syslog\t\t514/udp\n" +
		"submission\t587/tcp\n" +
		"ldaps\t\t636/tcp\n" +
		"imaps\t\t993/tcp\n" +
		"pop3s\t\t995/tcp\n" +
		"mysql\t\t3306/tcp\n" +
		"postgresql\t5432/tcp\n"
	passwd = "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group     = "root:x:0:\nnogroup:x:65534:\n"
	protocols = "ip\t0\tIP\n" +
		"icmp\t1\tICMP\n" +
		"igmp\t2\tIGMP\n" +
		"tcp\t6\tTCP\n" +
		"udp\t17\tUDP\n" +
		"ipv6-icmp\t58\tIPv6-ICMP\n"
)

// File writes file i's contents into b (MaxSize bytes) and returns its
// path and length; dns is resolv.conf's nameserver, an IPv4 address
// (zero: none).
func File(i int, b []byte, dns [4]byte) (path string, n int) {
	switch i {
	case 0:
		return "/etc/hosts", copy(b, hosts)
	case 1:
		if dns == [4]byte{} {
			return "/etc/resolv.conf", copy(b, resolvNone)
		}
		r := Resolv{NS: [MaxNS][4]byte{dns}, NNS: 1}
		return "/etc/resolv.conf", ResolvConf(b, &r)
	case 2:
		return "/etc/nsswitch.conf", copy(b, nsswitch)
	case 3:
		return "/etc/services", copy(b, services)
	case 4:
		return "/etc/passwd", copy(b, passwd)
	case 5:
		return "/etc/group", copy(b, group)
	default:
		return "/etc/protocols", copy(b, protocols)
	}
}

// Resolv is what resolv.conf says: name servers (IPv4) and the search
// list, its names separated by spaces. The kernel's boot file has the
// yolk.net one; the network service writes DHCP's (every server, the
// domain and search options) in the same form.
type Resolv struct {
	NS      [MaxNS][4]byte
	NNS     int
	Search  [MaxSearch]byte
	NSearch int
}

// MaxNS is how many name servers a Resolv holds (Go's resolver and
// glibc use the first three); MaxSearch the search list's bytes
// (glibc's old bound).
const (
	MaxNS     = 8
	MaxSearch = 256
)

// ResolvConf writes r as resolv.conf into b (MaxSize bytes) and returns
// its length: a nameserver line per server, a search line, and without a
// server the options that make a lookup fail within a second.
func ResolvConf(b []byte, r *Resolv) int {
	n := 0
	for i := 0; i < r.NNS && i < MaxNS; i++ {
		n += copy(b[n:], resolv)
		for j, v := range r.NS[i] {
			if j > 0 {
				b[n] = '.'
				n++
			}
			n += putDec(b[n:], int(v))
		}
		b[n] = '\n'
		n++
	}
	if k := min(r.NSearch, MaxSearch); k > 0 {
		n += copy(b[n:], "search ")
		n += copy(b[n:], r.Search[:k])
		b[n] = '\n'
		n++
	}
	if r.NNS == 0 {
		n += copy(b[n:], resolvOptions)
	}
	return n
}

// putDec writes v (0 to 999) in decimal and returns its length.
func putDec(b []byte, v int) int {
	n := 0
	if v >= 100 {
		b[n] = byte('0' + v/100)
		n++
	}
	if v >= 10 {
		b[n] = byte('0' + v/10%10)
		n++
	}
	b[n] = byte('0' + v%10)
	return n + 1
}
