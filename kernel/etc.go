package kernel

import "yolk/kernel/fs"

// The files under /etc that Go's resolver and lookups read (net's
// hosts, DNS, service and protocol lookups), made at boot by vfsInit,
// before the boot archive is unpacked: an archive's own file replaces
// one (untar unlinks what a file or link entry names).
//
//   - hosts: localhost on 127.0.0.1 and ::1, and the node name (uname's,
//     nodename) on 127.0.1.1 as Debian gives it, so the program can look
//     itself up.
//   - resolv.conf: the DNS server yolk.net names (etcDNS). Without one,
//     no nameserver line: Go's resolver then asks 127.0.0.1:53 and
//     [::1]:53, where nothing answers (no socket, or port unreachable);
//     "timeout:1 attempts:1" bounds a lookup at about a second should
//     packets be lost instead.
//   - nsswitch.conf: hosts from files, then DNS (Go reads /etc/hosts
//     first).
//   - services, protocols: the well-known names, short.
//   - passwd, group: root (the one process's user and group, home /root,
//     which is made too) and nobody, so that os/user finds the user the
//     program runs as.

// nodename is uname's nodename (sysUname) and /etc/hosts's name for
// 127.0.1.1.
const nodename = "yolk"

// etcDNS is the DNS server for resolv.conf, an IPv4 address; zero: none.
// The command line's network setting (yolk.net=ADDR/PREFIX,GATEWAY,DNS)
// sets it: it is parsed before vfsInit runs.
var etcDNS [4]byte

var (
	etcDir  = [...]byte{'/', 'e', 't', 'c'}
	rootDir = [...]byte{'/', 'r', 'o', 'o', 't'}
	etcPath [32]byte
	etcBuf  [1024]byte
)

const (
	etcHosts = "127.0.0.1\tlocalhost\n" +
		"127.0.1.1\t" + nodename + "\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"ff02::1\tip6-allnodes\n" +
		"ff02::2\tip6-allrouters\n"
	etcResolvNone = "# No DNS server: yolk.net=ADDR/PREFIX,GATEWAY,DNS names one.\n" +
		"options timeout:1 attempts:1\n"
	etcResolv   = "nameserver "
	etcNsswitch = "hosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n"
	etcServices = "ftp-data\t20/tcp\n" +
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
	etcPasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	etcGroup     = "root:x:0:\nnogroup:x:65534:\n"
	etcProtocols = "ip\t0\tIP\n" +
		"icmp\t1\tICMP\n" +
		"igmp\t2\tIGMP\n" +
		"tcp\t6\tTCP\n" +
		"udp\t17\tUDP\n" +
		"ipv6-icmp\t58\tIPv6-ICMP\n"
)

// etcFiles is how many files etcFile makes.
const etcFiles = 7

// etcFile writes file i's contents into b and returns its path and
// length.
func etcFile(i int, b []byte) (path string, n int) {
	switch i {
	case 0:
		return "/etc/hosts", copy(b, etcHosts)
	case 1:
		if etcDNS == [4]byte{} {
			return "/etc/resolv.conf", copy(b, etcResolvNone)
		}
		n = copy(b, etcResolv)
		for j, v := range etcDNS {
			if j > 0 {
				b[n] = '.'
				n++
			}
			n += putDec(b[n:], int(v))
		}
		b[n] = '\n'
		return "/etc/resolv.conf", n + 1
	case 2:
		return "/etc/nsswitch.conf", copy(b, etcNsswitch)
	case 3:
		return "/etc/services", copy(b, etcServices)
	case 4:
		return "/etc/passwd", copy(b, etcPasswd)
	case 5:
		return "/etc/group", copy(b, etcGroup)
	default:
		return "/etc/protocols", copy(b, etcProtocols)
	}
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

// etcInit makes /etc and its files (mode 0644).
func etcInit() {
	vfs.Mkdir(fs.AtCWD, etcDir[:], 0o755)
	vfs.Mkdir(fs.AtCWD, rootDir[:], 0o700) // root's home (passwd)
	for i := 0; i < etcFiles; i++ {
		path, n := etcFile(i, etcBuf[:])
		p := copy(etcPath[:], path)
		if e := writeFile(etcPath[:p], etcBuf[:n], 0o644); e != 0 {
			klog("etc: ")
			kprintBytes(etcPath[:p])
			kprint(": errno ")
			kprintDec(int64(e))
			kprint("\n")
		}
	}
	procInit()
}

// /proc and /sys: kernel/procfs's tree, mounted on empty directories
// (procfiles.go). /proc/self/exe is the image file when the command line
// names it (yolk.exe=PATH): the loaded segments are not the file (the
// program has changed its data), so yolk run gives the guest the image
// file itself, read-only on a share of its own (qemu/exe.go), and opens
// and stats that follow the link go there. Without yolk.exe — no virtio
// (the Raspberry Pi), a PC image, every share slot taken — readlink and
// open of /proc/self/exe are ENOENT (docs/files.md).
var (
	procDirs = [...]string{"/proc", "/sys"}
	exePath  [256]byte // yolk.exe=PATH: absolute
	exeLen   int
)

// procInit mounts /proc and /sys (etcInit calls it).
func procInit() {
	for i, path := range procDirs {
		p := copy(etcPath[:], path)
		e := vfs.Mkdir(fs.AtCWD, etcPath[:p], 0o555)
		if e == 0 {
			e = mountAt(etcPath[:p], int32(mountProc+i))
		}
		if e != 0 {
			klog("proc: ")
			kprintBytes(etcPath[:p])
			kprint(": errno ")
			kprintDec(int64(e))
			kprint("\n")
		}
	}
}
