package net

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The differential test for AF_INET and AF_INET6 on loopback: the same
// call sequences through this package and through the host's Linux, the
// logs compared. Ports are shown as the order they were first seen in
// (ports the host chooses differ from ours), every socket is non-blocking.

type inetSys interface {
	socket(family, typ, proto int) (int, error)
	bind(fd int, sa []byte) error
	listen(fd, backlog int) error
	connect(fd int, sa []byte) error
	accept(fd int) (int, error)
	send(fd int, data string, flags int, sa []byte) (int, error)
	recv(fd int, n, flags int) (data string, r int, mflags int, from []byte, err error)
	shutdown(fd, how int) error
	close(fd int) error
	name(fd int, peer bool) ([]byte, error)
	getopt(fd, level, opt int) (int, error)
	setopt(fd, level, opt, v int) error
	poll(fd int) uint32
}

type inetHost struct{ host }

func (inetHost) socket(family, typ, proto int) (int, error) {
	return unix.Socket(family, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
}
func (inetHost) getopt(fd, level, opt int) (int, error) { return unix.GetsockoptInt(fd, level, opt) }
func (inetHost) setopt(fd, level, opt, v int) error     { return unix.SetsockoptInt(fd, level, opt, v) }

type inetModel struct{ n *testNet }

func (m inetModel) socket(family, typ, proto int) (int, error) {
	s, e := m.n.Socket(family, typ, proto, true)
	return s, errOf(e)
}
func (m inetModel) bind(s int, sa []byte) error { return errOf(m.n.BindInet(s, sa)) }
func (m inetModel) listen(s, b int) error       { return errOf(m.n.Listen(s, b)) }
func (m inetModel) connect(s int, sa []byte) error {
	_, e := m.n.Connect(s, &Addr{Raw: sa})
	return errOf(e)
}
func (m inetModel) accept(s int) (int, error) {
	c, _, e := m.n.Accept(s)
	if e == 0 {
		m.n.SetNonblocking(c, true)
	}
	return c, errOf(e)
}
func (m inetModel) send(s int, data string, flags int, sa []byte) (int, error) {
	b := []byte(data)
	var a *Addr
	if sa != nil {
		a = &Addr{Raw: sa}
	}
	c, _, e := m.n.Send(s, &Iov{One: b, Len: len(b)}, 0, flags|unix.MSG_DONTWAIT, a)
	return c, errOf(e)
}
func (m inetModel) recv(s, n, flags int) (string, int, int, []byte, error) {
	return model{n: m.n}.recv(s, n, flags)
}
func (m inetModel) shutdown(s, how int) error { return errOf(m.n.Shutdown(s, how)) }
func (m inetModel) close(s int) error         { m.n.Close(s); return nil }
func (m inetModel) name(s int, peer bool) ([]byte, error) {
	return model{n: m.n}.name(s, peer)
}
func (m inetModel) getopt(s, level, opt int) (int, error) {
	var out [16]byte
	_, e := m.n.Getsockopt(s, level, opt, &out)
	return int(int32(binary.LittleEndian.Uint32(out[:]))), errOf(e)
}
func (m inetModel) setopt(s, level, opt, v int) error {
	return errOf(m.n.Setsockopt(s, level, opt, binary.LittleEndian.AppendUint32(nil, uint32(v))))
}
func (m inetModel) poll(s int) uint32 { return model{n: m.n}.poll(s) }

// inetLog records calls and results.
type inetLog struct {
	s     inetSys
	fds   []int
	ports map[uint16]int
	out   []string
}

func (l *inetLog) logf(format string, a ...any) { l.out = append(l.out, fmt.Sprintf(format, a...)) }

// port is the label of port p: P1 for the first seen, and so on.
func (l *inetLog) port(p uint16) string {
	if p == 0 {
		return "0"
	}
	if l.ports == nil {
		l.ports = map[uint16]int{}
	}
	if _, ok := l.ports[p]; !ok {
		l.ports[p] = len(l.ports) + 1
	}
	return fmt.Sprintf("P%d", l.ports[p])
}

// show prints a sockaddr with its port labelled.
func (l *inetLog) show(b []byte) string {
	if len(b) < 4 {
		return fmt.Sprintf("%x", b)
	}
	f := binary.LittleEndian.Uint16(b)
	p := l.port(binary.BigEndian.Uint16(b[2:]))
	switch {
	case f == unix.AF_INET && len(b) >= 8:
		return fmt.Sprintf("in(%d.%d.%d.%d:%s)/%d", b[4], b[5], b[6], b[7], p, len(b))
	case f == unix.AF_INET6 && len(b) >= 24:
		return fmt.Sprintf("in6([%x]:%s)/%d", b[8:24], p, len(b))
	}
	return fmt.Sprintf("%x", b)
}

// sin is a sockaddr_in; port < 0 is the label -port's port.
func (l *inetLog) sin(ip string, port int) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], l.realPort(port))
	var a, c, d, e byte
	fmt.Sscanf(ip, "%d.%d.%d.%d", &a, &c, &d, &e)
	copy(b[4:], []byte{a, c, d, e})
	return b
}

// sin6 is a sockaddr_in6 for "::1", "::", or a v4-mapped "::ffff:a.b.c.d".
func (l *inetLog) sin6(ip string, port int) []byte {
	b := make([]byte, 28)
	binary.LittleEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], l.realPort(port))
	switch {
	case ip == "::1":
		b[23] = 1
	case strings.HasPrefix(ip, "::ffff:"):
		b[18], b[19] = 0xff, 0xff
		v4 := l.sin(ip[7:], 0)
		copy(b[20:], v4[4:8])
	}
	return b
}

func (l *inetLog) realPort(port int) uint16 {
	if port >= 0 {
		return uint16(port)
	}
	for p, i := range l.ports {
		if i == -port {
			return p
		}
	}
	return 1 // a port nobody has: refused
}

func (l *inetLog) add(fd int, err error) int {
	if err != nil {
		return -1
	}
	l.fds = append(l.fds, fd)
	return len(l.fds) - 1
}

func (l *inetLog) socket(family, typ, proto int) int {
	fd, err := l.s.socket(family, typ, proto)
	l.logf("socket(%d, %d, %d) %s", family, typ, proto, errno(err))
	return l.add(fd, err)
}
func (l *inetLog) bind(i int, sa []byte) {
	l.logf("bind(%d, %s) %s", i, l.show(sa), errno(l.s.bind(l.fds[i], sa)))
}
func (l *inetLog) listen(i, b int) { l.logf("listen(%d, %d) %s", i, b, errno(l.s.listen(l.fds[i], b))) }
func (l *inetLog) connect(i int, sa []byte) {
	l.logf("connect(%d, %s) %s", i, l.show(sa), errno(l.s.connect(l.fds[i], sa)))
}
func (l *inetLog) accept(i int) int {
	fd, err := l.s.accept(l.fds[i])
	l.logf("accept(%d) %s", i, errno(err))
	return l.add(fd, err)
}
func (l *inetLog) send(i int, data string, flags int) {
	n, err := l.s.send(l.fds[i], data, flags, nil)
	l.logf("send(%d, %q, %#x) %d %s", i, data, flags, n, errno(err))
}
func (l *inetLog) sendto(i int, data string, sa []byte) {
	n, err := l.s.send(l.fds[i], data, 0, sa)
	l.logf("sendto(%d, %q, %s) %d %s", i, data, l.show(sa), n, errno(err))
}

// sendtoN sends n bytes to sa, logged by their count.
func (l *inetLog) sendtoN(i, n int, sa []byte) {
	k, err := l.s.send(l.fds[i], strings.Repeat("y", n), 0, sa)
	l.logf("sendto(%d, %d bytes, %s) %d %s", i, n, l.show(sa), k, errno(err))
}
func (l *inetLog) recv(i, n, flags int) {
	d, r, mf, from, err := l.s.recv(l.fds[i], n, flags)
	l.logf("recv(%d, %d, %#x) %q %d flags %#x from %s %s", i, n, flags, d, r, mf, l.show(from), errno(err))
}
func (l *inetLog) shutdown(i, how int) {
	l.logf("shutdown(%d, %d) %s", i, how, errno(l.s.shutdown(l.fds[i], how)))
}
func (l *inetLog) close(i int) { l.s.close(l.fds[i]); l.logf("close(%d)", i) }
func (l *inetLog) names(i int) {
	a, err := l.s.name(l.fds[i], false)
	b, err2 := l.s.name(l.fds[i], true)
	l.logf("names(%d) %s %s / %s %s", i, l.show(a), errno(err), l.show(b), errno(err2))
}
func (l *inetLog) getopt(i, level, opt int) {
	v, err := l.s.getopt(l.fds[i], level, opt)
	l.logf("getsockopt(%d, %d, %d) %d %s", i, level, opt, v, errno(err))
}
func (l *inetLog) setopt(i, level, opt, v int) {
	l.logf("setsockopt(%d, %d, %d, %d) %s", i, level, opt, v, errno(l.s.setopt(l.fds[i], level, opt, v)))
}
func (l *inetLog) poll(i int) { l.logf("poll(%d) %#x", i, l.s.poll(l.fds[i])) }
func (l *inetLog) closeAll() {
	for _, fd := range l.fds {
		l.s.close(fd)
	}
}

// listener is a TCP socket listening on ip:0 (family's), its port P1.
func (l *inetLog) listener(family int, ip string, backlog int) int {
	s := l.socket(family, unix.SOCK_STREAM, 0)
	l.setopt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if family == unix.AF_INET {
		l.bind(s, l.sin(ip, 0))
	} else {
		l.bind(s, l.sin6(ip, 0))
	}
	l.listen(s, backlog)
	l.names(s)
	return s
}

const (
	solTCP  = unix.IPPROTO_TCP
	solIP   = unix.IPPROTO_IP
	solIPv6 = unix.IPPROTO_IPV6
	solSock = unix.SOL_SOCKET
)

var inetScripts = map[string]func(l *inetLog){
	"TCP": func(l *inetLog) {
		s := l.listener(unix.AF_INET, "127.0.0.1", 5)
		c := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.poll(c)
		l.names(c)
		l.recv(c, 5, 0)
		l.send(c, "x", 0)
		l.connect(c, l.sin("127.0.0.1", -1))
		l.poll(c)
		l.getopt(c, solSock, unix.SO_ERROR)
		l.connect(c, l.sin("127.0.0.1", -1))
		l.poll(s)
		a := l.accept(s)
		l.accept(s)
		l.names(a)
		l.names(c)
		l.poll(a)
		l.send(c, "hello", 0)
		l.poll(a)
		l.recv(a, 2, unix.MSG_PEEK)
		l.recv(a, 10, 0)
		l.recv(a, 10, 0)
		l.shutdown(c, unix.SHUT_WR)
		l.poll(c)
		l.poll(a)
		l.recv(a, 10, 0)
		l.send(c, "more", 0)
		l.send(a, "back", 0)
		l.recv(c, 10, 0)
		l.close(a)
		l.poll(c)
		l.recv(c, 10, 0)
		l.names(c)
		l.getopt(c, solSock, unix.SO_TYPE)
		l.getopt(c, solSock, unix.SO_DOMAIN)
		l.getopt(c, solSock, unix.SO_PROTOCOL)
		l.getopt(s, solSock, unix.SO_ACCEPTCONN)
	},
	"WriteAfterPeerClose": func(l *inetLog) {
		s := l.listener(unix.AF_INET, "127.0.0.1", 5)
		c := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(c, l.sin("127.0.0.1", -1))
		a := l.accept(s)
		l.close(a)
		l.poll(c)
		l.send(c, "into the void", 0)
		l.poll(c)
		l.names(c)
		l.recv(c, 10, 0)
		l.send(c, "again", 0)
		l.getopt(c, solSock, unix.SO_ERROR)
		l.send(c, "again", 0)
		l.recv(c, 10, 0)
		l.shutdown(c, unix.SHUT_RDWR)
		l.connect(c, l.sin("127.0.0.1", -1))
	},
	"Reset": func(l *inetLog) {
		s := l.listener(unix.AF_INET, "127.0.0.1", 5)
		c := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(c, l.sin("127.0.0.1", -1))
		a := l.accept(s)
		l.send(c, "unread", 0)
		l.send(a, "for c", 0)
		l.close(a)
		l.poll(c)
		l.recv(c, 3, 0)
		l.recv(c, 10, 0)
		l.recv(c, 10, 0)
		l.recv(c, 10, 0)
		l.names(c)
		l.send(c, "z", 0)
		// A listener closed with a connection not accepted resets it;
		// SO_LINGER 0 resets too.
		d := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(d, l.sin("127.0.0.1", -1))
		e := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(e, l.sin("127.0.0.1", -1))
		f := l.accept(s)
		l.close(s)
		l.poll(e)
		l.recv(e, 10, 0)
		l.recv(e, 10, 0)
		l.poll(d)
		l.s.setopt(l.fds[f], solSock, unix.SO_LINGER, 0)
		l.close(f)
		l.poll(d)
		l.recv(d, 10, 0)
	},
	"Refused": func(l *inetLog) {
		s := l.listener(unix.AF_INET, "127.0.0.1", 5)
		l.close(s)
		c := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(c, l.sin("127.0.0.1", -1))
		l.poll(c)
		l.getopt(c, solSock, unix.SO_ERROR)
		l.poll(c)
		l.connect(c, l.sin("127.0.0.1", -1))
		l.connect(c, l.sin("127.0.0.1", 0))
		l.connect(c, l.sin("127.0.0.1", 0)[:8])
		l.connect(c, l.sin6("::1", 1))
		l.connect(c, []byte{0, 0})
		u := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.connect(u, l.sin("127.0.0.1", 1))
		l.connect(u, l.sin6("::1", 1)[:20])
	},
	"AddrInUse": func(l *inetLog) {
		a := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.bind(a, l.sin("127.0.0.1", 0))
		l.names(a)
		b := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.bind(b, l.sin("127.0.0.1", -1))
		l.bind(b, l.sin("0.0.0.0", -1))
		l.bind(b, l.sin("127.0.0.2", -1))
		l.bind(b, l.sin("10.11.12.13", 0))
		l.bind(b, l.sin("127.0.0.1", 0)[:15])
		l.bind(b, l.sin6("::1", 0))
		l.setopt(a, solSock, unix.SO_REUSEADDR, 1)
		l.setopt(b, solSock, unix.SO_REUSEADDR, 1)
		l.bind(b, l.sin("127.0.0.1", -1))
		l.bind(b, l.sin("127.0.0.1", -1))
		l.listen(a, 1)
		l.listen(b, 1)
		c := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.setopt(c, solSock, unix.SO_REUSEADDR, 1)
		l.bind(c, l.sin("127.0.0.1", -1))
		d := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.bind(d, l.sin6("::", -1))
		l.setopt(d, solIPv6, unix.IPV6_V6ONLY, 1)
		l.bind(d, l.sin6("::", -1))
		l.setopt(d, solIPv6, unix.IPV6_V6ONLY, 0)
		l.getopt(d, solIPv6, unix.IPV6_V6ONLY)
		e := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.bind(e, l.sin6("::ffff:127.0.0.1", -1))
		l.bind(e, l.sin("127.0.0.1", 0))
		l.getopt(e, solIP, unix.IP_TTL)
	},
	"DualStack": func(l *inetLog) {
		s := l.listener(unix.AF_INET6, "::", 5)
		c := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(c, l.sin("127.0.0.1", -1))
		a := l.accept(s)
		l.names(a)
		l.names(c)
		d := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.connect(d, l.sin6("::1", -1))
		b := l.accept(s)
		l.names(b)
		e := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.connect(e, l.sin6("::ffff:127.0.0.1", -1))
		f := l.accept(s)
		l.names(f)
		l.names(e)
		v := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.setopt(v, solIPv6, unix.IPV6_V6ONLY, 1)
		l.bind(v, l.sin6("::", 0))
		l.listen(v, 5)
		l.names(v)
		g := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.connect(g, l.sin("127.0.0.1", -3))
		l.getopt(g, solSock, unix.SO_ERROR)
		h := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.connect(h, l.sin6("::1", -3))
		l.getopt(h, solSock, unix.SO_ERROR)
	},
	"UDP": func(l *inetLog) {
		a := l.socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		l.setopt(a, solSock, unix.SO_BROADCAST, 1)
		l.bind(a, l.sin("127.0.0.1", 0))
		l.names(a)
		l.poll(a)
		b := l.socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		l.send(b, "no peer", 0)
		l.names(b)
		l.sendto(b, "hi", l.sin("127.0.0.1", -1))
		l.names(b)
		l.sendto(b, "there", l.sin("127.0.0.1", -1))
		l.poll(a)
		l.recv(a, 1, unix.MSG_PEEK)
		l.recv(a, 1, unix.MSG_TRUNC)
		l.recv(a, 10, 0)
		l.recv(a, 10, 0)
		l.sendto(b, "zero", l.sin("127.0.0.1", 0))
		l.connect(b, l.sin("127.0.0.1", -1))
		l.names(b)
		l.send(b, "connected", 0)
		l.recv(a, 20, 0)
		l.sendto(a, "reply", l.sin("127.0.0.1", -2))
		l.recv(b, 20, 0)
		c := l.socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		l.sendto(c, "not from the peer", l.sin("127.0.0.1", -2))
		l.recv(b, 20, 0)
		l.connect(b, l.sin("127.0.0.1", 1))
		l.send(b, "to nobody", 0)
		l.poll(b)
		l.recv(b, 20, 0)
		l.send(b, "to nobody", 0)
		l.getopt(b, solSock, unix.SO_ERROR)
		l.connect(b, []byte{0, 0})
		l.names(b)
		l.shutdown(c, unix.SHUT_RD)
		l.poll(c)
		l.recv(c, 5, 0)
		l.listen(a, 1)
		l.accept(a)
		l.getopt(a, solTCP, unix.TCP_NODELAY)
		l.setopt(a, solIPv6, unix.IPV6_V6ONLY, 1)
	},
	// The largest datagrams: IPv6's 65,527 bytes, IPv4's 65,507 (from
	// an IPv6 socket too, to a v4-mapped address); a byte more is
	// EMSGSIZE; two of IPv6's largest queue on a fresh socket.
	"UDPLargest": func(l *inetLog) {
		a := l.socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		l.bind(a, l.sin6("::", 0))
		l.names(a)
		b := l.socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		l.sendtoN(b, 65528, l.sin6("::1", -1))
		l.sendtoN(b, 65527, l.sin6("::1", -1))
		l.sendtoN(b, 65527, l.sin6("::1", -1))
		l.poll(a)
		l.recv(a, 4, unix.MSG_TRUNC)
		l.recv(a, 4, unix.MSG_TRUNC)
		l.recv(a, 4, 0)
		l.sendtoN(b, 65508, l.sin6("::ffff:127.0.0.1", -1))
		l.sendtoN(b, 65507, l.sin6("::ffff:127.0.0.1", -1))
		c := l.socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		l.sendtoN(c, 65508, l.sin("127.0.0.1", -1))
		l.sendtoN(c, 65507, l.sin("127.0.0.1", -1))
		l.recv(a, 4, unix.MSG_TRUNC)
		l.recv(a, 4, unix.MSG_TRUNC)
		l.recv(a, 4, 0)
	},
	"UDP6": func(l *inetLog) {
		a := l.socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		l.bind(a, l.sin6("::", 0))
		b := l.socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		l.sendto(b, "v4", l.sin("127.0.0.1", -1))
		l.recv(a, 10, 0)
		c := l.socket(unix.AF_INET6, unix.SOCK_DGRAM, 0)
		l.sendto(c, "v6", l.sin6("::1", -1))
		l.recv(a, 10, 0)
		l.sendto(c, "v4 from v6", l.sin("127.0.0.1", -1))
		l.recv(a, 20, 0)
		l.connect(c, l.sin("127.0.0.1", -1))
		l.names(c)
	},
	"Options": func(l *inetLog) {
		t := l.socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		l.getopt(t, solTCP, unix.TCP_NODELAY)
		l.setopt(t, solTCP, unix.TCP_NODELAY, 1)
		l.getopt(t, solTCP, unix.TCP_NODELAY)
		l.getopt(t, solTCP, unix.TCP_KEEPIDLE)
		l.getopt(t, solTCP, unix.TCP_KEEPINTVL)
		l.getopt(t, solTCP, unix.TCP_KEEPCNT)
		l.setopt(t, solTCP, unix.TCP_KEEPIDLE, 15)
		l.setopt(t, solTCP, unix.TCP_KEEPIDLE, 0)
		l.setopt(t, solTCP, unix.TCP_KEEPCNT, 200)
		l.getopt(t, solTCP, unix.TCP_KEEPIDLE)
		l.setopt(t, solSock, unix.SO_KEEPALIVE, 1)
		l.getopt(t, solSock, unix.SO_KEEPALIVE)
		l.getopt(t, solIP, unix.IP_TTL)
		l.getopt(t, solIP, unix.IP_TOS)
		l.getopt(t, solIPv6, unix.IPV6_V6ONLY)
		l.getopt(t, solTCP, 9999)
		l.getopt(t, 99, 1)
		l.setopt(t, 99, 1, 1)
		s6 := l.socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
		l.getopt(s6, solIPv6, unix.IPV6_V6ONLY)
		l.getopt(s6, solIPv6, unix.IPV6_UNICAST_HOPS)
		l.setopt(s6, solIP, unix.IP_TOS, 0x10)
		for _, st := range [][3]int{
			{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_UDP},
			{unix.AF_INET, unix.SOCK_SEQPACKET, 0},
			{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_TCP},
			{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP},
			{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP},
		} {
			if fd := l.socket(st[0], st[1], st[2]); fd >= 0 {
				l.getopt(fd, solSock, unix.SO_PROTOCOL)
			}
		}
	},
}

func TestInetDiff(t *testing.T) {
	for name, script := range inetScripts {
		t.Run(name, func(t *testing.T) {
			h := &inetLog{s: inetHost{}}
			script(h)
			h.closeAll()
			n := new(testNet)
			n.Init(newEnv(t, 2048))
			y := &inetLog{s: inetModel{n}}
			script(y)
			compareLogs(t, h.out, y.out)
			y.closeAll()
		})
	}
}
