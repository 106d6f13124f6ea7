package net

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/fs"
)

// The differential test: the same sequences of socket calls run through
// this package (with kernel/fs for path names, as the kernel glues them)
// and through the host's Linux, every result and errno logged and the
// logs compared, as kernel/fs's diff_test.go does for files. Sockets are
// non-blocking on both sides, so nothing waits.

type sys interface {
	socket(typ int) (int, error)
	pair(typ int) (int, int, error)
	bind(fd int, sa []byte) error
	listen(fd, backlog int) error
	connect(fd int, sa []byte) error
	accept(fd int) (int, error)
	send(fd int, data string, flags int, sa []byte) (int, error)
	recv(fd int, n, flags int) (data string, r int, mflags int, from []byte, err error)
	shutdown(fd, how int) error
	close(fd int) error
	name(fd int, peer bool) ([]byte, error)
	getopt(fd, opt int) (int, error)
	setopt(fd, opt, v int) error
	poll(fd int) uint32
}

// sa is a sockaddr_un: "" the family alone, "@x" abstract, else a path.
func sa(name string) []byte {
	b := []byte{unix.AF_UNIX, 0}
	if strings.HasPrefix(name, "@") {
		return append(append(b, 0), name[1:]...)
	}
	if name == "" {
		return b
	}
	return append(append(b, name...), 0)
}

func errno(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(unix.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// host is the host's Linux.
type host struct{}

func (host) socket(typ int) (int, error) {
	return unix.Socket(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
}
func (host) pair(typ int) (int, int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	return fds[0], fds[1], err
}
func rawAddr(fd, nr int, sa []byte) error {
	var p unsafe.Pointer
	if len(sa) > 0 {
		p = unsafe.Pointer(&sa[0])
	}
	_, _, e := unix.Syscall(uintptr(nr), uintptr(fd), uintptr(p), uintptr(len(sa)))
	if e != 0 {
		return e
	}
	return nil
}
func (host) bind(fd int, sa []byte) error    { return rawAddr(fd, unix.SYS_BIND, sa) }
func (host) connect(fd int, sa []byte) error { return rawAddr(fd, unix.SYS_CONNECT, sa) }
func (host) listen(fd, b int) error          { return unix.Listen(fd, b) }
func (host) accept(fd int) (int, error) {
	n, _, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	return n, err
}
func (host) send(fd int, data string, flags int, sa []byte) (int, error) {
	b := []byte(data)
	var p, q unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	if len(sa) > 0 {
		q = unsafe.Pointer(&sa[0])
	}
	r, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(len(b)), uintptr(flags|unix.MSG_NOSIGNAL), uintptr(q), uintptr(len(sa)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
func (host) recv(fd, n, flags int) (string, int, int, []byte, error) {
	b := make([]byte, n)
	var from [128]byte
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(n)
	msg := unix.Msghdr{Name: &from[0], Namelen: uint32(len(from)), Iov: &iov, Iovlen: 1}
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return "", 0, 0, nil, e
	}
	return string(b[:min(int(r), n)]), int(r), int(msg.Flags), from[:msg.Namelen], nil
}
func (host) shutdown(fd, how int) error { return unix.Shutdown(fd, how) }
func (host) close(fd int) error         { return unix.Close(fd) }
func (host) name(fd int, peer bool) ([]byte, error) {
	var b [128]byte
	l := uint32(len(b))
	nr := unix.SYS_GETSOCKNAME
	if peer {
		nr = unix.SYS_GETPEERNAME
	}
	_, _, e := unix.Syscall(uintptr(nr), uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)))
	if e != 0 {
		return nil, e
	}
	return b[:l], nil
}
func (host) getopt(fd, opt int) (int, error) { return unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt) }
func (host) setopt(fd, opt, v int) error     { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, v) }
func (host) poll(fd int) uint32 {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLOUT | unix.POLLRDHUP}}
	unix.Poll(p, 0)
	return uint32(p[0].Revents)
}

// model is this package, glued to kernel/fs as the kernel glues them.
type model struct {
	n  *testNet
	fs *fs.FS[fsEnv]
}

func newModel(t *testing.T) model {
	env := newEnv(t, 2048)
	m := model{n: new(testNet), fs: new(fs.FS[fsEnv])}
	m.n.Init(env)
	m.fs.Init(fsEnv{env}, 64)
	return m
}

func errOf(e Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func (m model) socket(typ int) (int, error) {
	s, e := m.n.Socket(unix.AF_UNIX, typ, 0, true)
	return s, errOf(e)
}
func (m model) pair(typ int) (int, int, error) {
	a, b, e := m.n.Pair(typ, 0, true)
	return a, b, errOf(e)
}
func (m model) bind(s int, sa []byte) error {
	kind, name, e := ParseAddr(sa)
	switch {
	case e != 0:
	case kind == AddrAuto:
		e = m.n.Autobind(s)
	case kind == AddrAbstract:
		e = m.n.BindAbstract(s, name)
	default:
		if e = m.fs.BindSocket(fs.AtCWD, name, 0o777, m.n.ID(s)); e == 0 {
			if e = m.n.BindPath(s, name); e != 0 {
				m.fs.Unlink(fs.AtCWD, name, 0)
			}
		}
	}
	return errOf(e)
}

// addr resolves a sockaddr as connect and sendto do.
func (m model) addr(sa []byte) (*Addr, Errno) {
	kind, name, e := ParseAddr(sa)
	if e != 0 || kind == AddrAuto {
		return nil, unix.EINVAL
	}
	if kind == AddrAbstract {
		return &Addr{Name: name}, 0
	}
	id, e := m.fs.SocketAt(fs.AtCWD, name)
	return &Addr{Path: true, ID: id}, e
}
func (m model) connect(s int, sa []byte) error {
	if len(sa) >= 2 && sa[0] == unix.AF_UNSPEC && m.n.Type(s) == unix.SOCK_DGRAM {
		_, e := m.n.Connect(s, nil)
		return errOf(e)
	}
	a, e := m.addr(sa)
	if e == 0 {
		_, e = m.n.Connect(s, a)
	}
	return errOf(e)
}
func (m model) listen(s, b int) error { return errOf(m.n.Listen(s, b)) }
func (m model) accept(s int) (int, error) {
	c, _, e := m.n.Accept(s)
	if e == 0 {
		m.n.SetNonblocking(c, true)
	}
	return c, errOf(e)
}
func (m model) send(s int, data string, flags int, sa []byte) (int, error) {
	b := []byte(data)
	var a *Addr
	if sa != nil && m.n.Type(s) != unix.SOCK_STREAM {
		var e Errno
		if a, e = m.addr(sa); e != 0 {
			return 0, e
		}
	} else if sa != nil {
		a = &Addr{}
	}
	c, _, e := m.n.Send(s, &Iov{One: b, Len: len(b)}, 0, flags|unix.MSG_DONTWAIT, a)
	return c, errOf(e)
}
func (m model) recv(s, n, flags int) (string, int, int, []byte, error) {
	b := make([]byte, n)
	var msg Msg
	_, e := m.n.Recv(s, &Iov{One: b, Len: n}, flags|unix.MSG_DONTWAIT, &msg)
	if e != 0 {
		return "", 0, 0, nil, e
	}
	return string(b[:min(msg.N, n)]), msg.N, msg.Flags, msg.Addr[:msg.AddrLen], nil
}
func (m model) shutdown(s, how int) error { return errOf(m.n.Shutdown(s, how)) }
func (m model) close(s int) error         { m.n.Close(s); return nil }
func (m model) name(s int, peer bool) ([]byte, error) {
	var b [AddrMax]byte
	l, e := m.n.Name(s, peer, &b)
	return b[:l], errOf(e)
}
func (m model) getopt(s, opt int) (int, error) {
	var out [16]byte
	_, e := m.n.Getsockopt(s, unix.SOL_SOCKET, opt, &out)
	return int(int32(uint32(out[0]) | uint32(out[1])<<8 | uint32(out[2])<<16 | uint32(out[3])<<24)), errOf(e)
}
func (m model) setopt(s, opt, v int) error {
	b := []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
	return errOf(m.n.Setsockopt(s, unix.SOL_SOCKET, opt, b))
}
func (m model) poll(s int) uint32 {
	id, _ := m.n.Pollable(s)
	ev, _, _ := m.n.Poll(s, id)
	return ev & (unix.POLLIN | unix.POLLOUT | unix.POLLRDHUP | unix.POLLERR | unix.POLLHUP)
}

// logger records calls and results; sockets are named by the order
// they were made, so the logs of both sides compare.
type logger struct {
	s   sys
	dir string
	fds []int
	out []string
}

func (l *logger) logf(format string, a ...any) { l.out = append(l.out, fmt.Sprintf(format, a...)) }

func (l *logger) add(fd int, err error) int {
	if err != nil {
		return -1
	}
	l.fds = append(l.fds, fd)
	return len(l.fds) - 1
}

// path is name in the test's directory, as a sockaddr.
func (l *logger) path(name string) []byte {
	if name == "" || name[0] == '@' {
		return sa(name)
	}
	return sa(filepath.Join(l.dir, name))
}

// show prints a returned sockaddr with the test's directory taken out.
func (l *logger) show(b []byte) string {
	return fmt.Sprintf("len %d %q", len(b), strings.ReplaceAll(string(b), l.dir, "DIR"))
}

func (l *logger) socket(typ int) int {
	fd, err := l.s.socket(typ)
	l.logf("socket(%d) %s", typ, errno(err))
	return l.add(fd, err)
}
func (l *logger) pair(typ int) (int, int) {
	a, b, err := l.s.pair(typ)
	l.logf("socketpair(%d) %s", typ, errno(err))
	return l.add(a, err), l.add(b, err)
}
func (l *logger) bind(i int, name string) {
	l.logf("bind(%d, %q) %s", i, name, errno(l.s.bind(l.fds[i], l.path(name))))
}
func (l *logger) listen(i, b int) { l.logf("listen(%d, %d) %s", i, b, errno(l.s.listen(l.fds[i], b))) }
func (l *logger) connect(i int, name string) {
	l.logf("connect(%d, %q) %s", i, name, errno(l.s.connect(l.fds[i], l.path(name))))
}
func (l *logger) unspec(i int) {
	l.logf("connect(%d, AF_UNSPEC) %s", i, errno(l.s.connect(l.fds[i], []byte{0, 0})))
}
func (l *logger) accept(i int) int {
	fd, err := l.s.accept(l.fds[i])
	l.logf("accept(%d) %s", i, errno(err))
	return l.add(fd, err)
}
func (l *logger) send(i int, data string, flags int) {
	n, err := l.s.send(l.fds[i], data, flags, nil)
	l.logf("send(%d, %q, %#x) %d %s", i, data, flags, n, errno(err))
}
func (l *logger) sendto(i int, data string, name string) {
	n, err := l.s.send(l.fds[i], data, 0, l.path(name))
	if len(data) > 20 {
		data = fmt.Sprintf("%d bytes", len(data))
	}
	l.logf("sendto(%d, %q, %q) %d %s", i, data, name, n, errno(err))
}
func (l *logger) recv(i, n, flags int) {
	d, r, mf, from, err := l.s.recv(l.fds[i], n, flags)
	l.logf("recv(%d, %d, %#x) %q %d flags %#x from %s %s", i, n, flags, d, r, mf, l.show(from), errno(err))
}
func (l *logger) shutdown(i, how int) {
	l.logf("shutdown(%d, %d) %s", i, how, errno(l.s.shutdown(l.fds[i], how)))
}
func (l *logger) close(i int) { l.s.close(l.fds[i]); l.logf("close(%d)", i) }
func (l *logger) names(i int) {
	a, err := l.s.name(l.fds[i], false)
	b, err2 := l.s.name(l.fds[i], true)
	l.logf("names(%d) %s %s / %s %s", i, l.show(a), errno(err), l.show(b), errno(err2))
}
func (l *logger) getopt(i, opt int) {
	v, err := l.s.getopt(l.fds[i], opt)
	l.logf("getsockopt(%d, %d) %d %s", i, opt, v, errno(err))
}
func (l *logger) setopt(i, opt, v int) {
	l.logf("setsockopt(%d, %d, %d) %s", i, opt, v, errno(l.s.setopt(l.fds[i], opt, v)))
}
func (l *logger) poll(i int) { l.logf("poll(%d) %#x", i, l.s.poll(l.fds[i])) }
func (l *logger) closeAll() {
	for _, fd := range l.fds {
		l.s.close(fd)
	}
}

// scripts are the sequences run on both sides.
var scripts = map[string]func(l *logger){
	"StreamPair": func(l *logger) {
		a, b := l.pair(unix.SOCK_STREAM)
		l.names(a)
		l.poll(a)
		l.send(a, "hello", 0)
		l.poll(b)
		l.recv(b, 3, unix.MSG_PEEK)
		l.recv(b, 3, 0)
		l.recv(b, 10, 0)
		l.recv(b, 10, 0)
		l.shutdown(a, unix.SHUT_WR)
		l.poll(a)
		l.poll(b)
		l.recv(b, 10, 0)
		l.send(a, "x", 0)
		l.send(b, "back", 0)
		l.recv(a, 10, 0)
		l.close(b)
		l.poll(a)
		l.send(a, "y", 0)
		l.recv(a, 10, 0)
		l.getopt(a, unix.SO_ERROR)
	},
	"CloseUnread": func(l *logger) {
		a, b := l.pair(unix.SOCK_STREAM)
		l.send(a, "unread", 0)
		l.send(b, "for a", 0)
		l.close(b)
		l.poll(a)
		l.recv(a, 3, 0)
		l.recv(a, 10, 0)
		l.recv(a, 10, 0)
		l.recv(a, 10, 0)
		l.getopt(a, unix.SO_ERROR)
		l.send(a, "z", 0)
	},
	"ListenConnect": func(l *logger) {
		s := l.socket(unix.SOCK_STREAM)
		l.setopt(s, unix.SO_REUSEADDR, 1)
		l.getopt(s, unix.SO_REUSEADDR)
		l.listen(s, 5)
		l.bind(s, "srv")
		l.bind(s, "srv2")
		l.bind(s, "")
		t := l.socket(unix.SOCK_STREAM)
		l.bind(t, "srv")
		l.bind(t, "nodir/x")
		c := l.socket(unix.SOCK_STREAM)
		l.recv(c, 5, 0)
		l.send(c, "x", 0)
		l.names(c)
		l.poll(c)
		l.connect(c, "srv")
		l.accept(s)
		l.poll(s)
		l.listen(s, 5)
		l.getopt(s, unix.SO_ACCEPTCONN)
		l.poll(s)
		l.accept(c)
		l.connect(c, "srv")
		l.connect(c, "missing")
		l.connect(c, "srv")
		l.poll(s)
		a := l.accept(s)
		l.accept(s)
		l.names(a)
		l.names(c)
		l.send(c, "ping", 0)
		l.recv(a, 10, 0)
		l.send(a, "pong", 0)
		l.recv(c, 10, 0)
		l.listen(a, 1)
		l.bind(c, "client")
		l.names(a)
		u := l.socket(unix.SOCK_STREAM)
		l.connect(u, "srv")
		l.close(s)
		l.recv(u, 5, 0)
		l.recv(u, 5, 0)
		l.poll(u)
		v := l.socket(unix.SOCK_STREAM)
		l.connect(v, "srv")
		l.connect(v, "missing")
		l.connect(v, "")
		l.connect(v, "@nobody")
		d := l.socket(unix.SOCK_DGRAM)
		l.bind(d, "dg")
		l.connect(v, "dg")
		l.listen(d, 1)
		l.accept(d)
		l.getopt(d, unix.SO_TYPE)
		l.getopt(d, unix.SO_DOMAIN)
		l.getopt(v, unix.SO_TYPE)
		l.getopt(v, 9999)
		l.setopt(v, unix.SO_TYPE, 1)
		l.setopt(v, unix.SO_PASSCRED, 1)
		l.getopt(v, unix.SO_PASSCRED)
		l.shutdown(v, 3)
		l.shutdown(v, unix.SHUT_RDWR)
		l.poll(v)
	},
	"Backlog": func(l *logger) {
		s := l.socket(unix.SOCK_STREAM)
		l.bind(s, "@backlog")
		l.listen(s, 1)
		for range 4 {
			c := l.socket(unix.SOCK_STREAM)
			l.connect(c, "@backlog")
		}
		l.accept(s)
		c := l.socket(unix.SOCK_STREAM)
		l.connect(c, "@backlog")
		l.connect(c, "@backlog")
		l.listen(s, 0)
		l.accept(s)
		l.accept(s)
		l.accept(s)
		l.listen(s, -1)
	},
	"Abstract": func(l *logger) {
		a := l.socket(unix.SOCK_STREAM)
		l.bind(a, "@abs")
		l.names(a)
		b := l.socket(unix.SOCK_STREAM)
		l.bind(b, "@abs")
		d := l.socket(unix.SOCK_DGRAM)
		l.bind(d, "@abs")
		l.bind(b, "@")
		l.names(b)
		c := l.socket(unix.SOCK_STREAM)
		l.bind(c, "")
		l.bind(c, "")
		a2, err := l.s.name(l.fds[c], false)
		l.logf("autobind name length %d, err %v, leading NUL %v", len(a2), err, len(a2) > 2 && a2[2] == 0)
		l.listen(a, 2)
		l.connect(c, "@abs")
		l.close(a)
		e := l.socket(unix.SOCK_STREAM)
		l.bind(e, "@abs")
	},
	"Datagram": func(l *logger) {
		a := l.socket(unix.SOCK_DGRAM)
		b := l.socket(unix.SOCK_DGRAM)
		l.bind(a, "@dga")
		l.bind(b, "dgb")
		l.send(a, "no peer", 0)
		l.recv(a, 10, 0)
		l.poll(a)
		l.sendto(a, "to b", "dgb")
		l.sendto(a, "0123456789", "dgb")
		l.sendto(a, "", "dgb")
		l.poll(b)
		l.recv(b, 10, unix.MSG_PEEK)
		l.recv(b, 10, 0)
		l.recv(b, 4, 0)
		l.recv(b, 10, 0)
		l.recv(b, 10, 0)
		l.sendto(a, "0123456789", "dgb")
		l.recv(b, 4, unix.MSG_TRUNC)
		c := l.socket(unix.SOCK_DGRAM)
		l.sendto(c, "anon", "@dga")
		l.recv(a, 10, 0)
		l.sendto(c, "x", "@none")
		l.sendto(c, "x", "nofile")
		l.connect(c, "dgb")
		l.names(c)
		l.send(c, "conn", 0)
		l.recv(b, 10, 0)
		l.connect(b, "@dga")
		l.sendto(c, "refused", "dgb")
		l.unspec(b)
		l.sendto(c, "ok now", "dgb")
		l.recv(b, 10, 0)
		l.unspec(c)
		l.names(c)
		// The queue takes max_dgram_qlen+1 messages from a stranger.
		for i := range 13 {
			l.sendto(c, fmt.Sprint(i), "dgb")
		}
		l.poll(b)
		l.recv(b, 10, 0)
		l.sendto(c, "again", "dgb")
		l.sendto(c, "again", "dgb")
		l.close(b)
		l.sendto(c, "closed", "dgb")
		l.connect(a, "@dga")
		l.send(a, "self", 0)
		l.recv(a, 10, 0)
		s := l.socket(unix.SOCK_STREAM)
		l.bind(s, "st")
		l.sendto(a, "x", "st")
		l.connect(a, "st")
		l.shutdown(a, unix.SHUT_RD)
		l.poll(a)
		l.recv(a, 10, 0)
	},
	"DatagramPeerClose": func(l *logger) {
		a := l.socket(unix.SOCK_DGRAM)
		b := l.socket(unix.SOCK_DGRAM)
		l.bind(a, "@pa")
		l.connect(b, "@pa")
		l.send(b, "1", 0)
		l.close(a)
		l.send(b, "2", 0)
		l.send(b, "3", 0)
		l.names(b)
		x, y := l.pair(unix.SOCK_DGRAM)
		l.send(x, "p", 0)
		l.recv(y, 5, 0)
		l.shutdown(x, unix.SHUT_WR)
		l.send(x, "q", 0)
		l.send(y, "r", 0)
		l.close(y)
		l.send(x, "s", 0)
		u := l.socket(unix.SOCK_DGRAM)
		l.shutdown(u, unix.SHUT_WR)
		l.send(u, "u", 0)
		l.sendto(u, "u", "@pa")
		l.sendto(u, string(make([]byte, 300000)), "@pa")
		w := l.socket(unix.SOCK_DGRAM)
		l.sendto(w, string(make([]byte, 300000)), "@pa")
		l.sendto(w, "x", "@pa")
		l.shutdown(u, unix.SHUT_RD)
		l.recv(u, 5, 0)
	},
	"Seqpacket": func(l *logger) {
		s := l.socket(unix.SOCK_SEQPACKET)
		l.bind(s, "sp")
		l.listen(s, 4)
		c := l.socket(unix.SOCK_SEQPACKET)
		l.send(c, "early", 0)
		l.recv(c, 5, 0)
		l.poll(c)
		l.connect(c, "sp")
		a := l.accept(s)
		l.send(c, "first", 0)
		l.send(c, "second message", 0)
		l.send(c, "", 0)
		l.recv(a, 3, 0)
		l.recv(a, 100, 0)
		l.recv(a, 100, 0)
		l.recv(a, 100, 0)
		l.poll(a)
		l.send(a, "reply", 0)
		l.recv(c, 3, unix.MSG_TRUNC)
		l.send(a, "unread", 0)
		l.close(c)
		l.poll(a)
		l.recv(a, 10, 0)
		l.send(a, "gone", 0)
		l.send(a, "gone", 0)
		l.recv(a, 10, 0)
		x, y := l.pair(unix.SOCK_SEQPACKET)
		l.shutdown(x, unix.SHUT_WR)
		l.recv(y, 10, 0)
		l.send(y, "to x", 0)
		l.recv(x, 10, 0)
		l.send(x, "no", 0)
		l.getopt(x, unix.SO_TYPE)
	},
	"Types": func(l *logger) {
		for _, typ := range []int{unix.SOCK_RAW, unix.SOCK_RDM, 0, 11} {
			fd := l.socket(typ)
			if fd >= 0 {
				l.getopt(fd, unix.SO_TYPE)
			}
		}
		p := l.socket(unix.SOCK_STREAM)
		l.getopt(p, unix.SO_SNDBUF+1000)
		l.setopt(p, unix.SO_SNDBUF, 4096)
		l.getopt(p, unix.SO_SNDBUF)
		l.setopt(p, unix.SO_RCVBUF, 1)
		l.getopt(p, unix.SO_RCVBUF)
		l.setopt(p, unix.SO_KEEPALIVE, 7)
		l.getopt(p, unix.SO_KEEPALIVE)
	},
}

func TestDiff(t *testing.T) {
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			h := &logger{s: host{}, dir: dir}
			script(h)
			h.closeAll()
			m := newModel(t)
			// The same directory in the model's file system.
			p := ""
			for _, c := range strings.Split(dir, "/")[1:] {
				p += "/" + c
				if e := m.fs.Mkdir(fs.AtCWD, []byte(p), 0o755); e != 0 {
					t.Fatalf("mkdir %s: %v", p, e)
				}
			}
			y := &logger{s: m, dir: dir}
			script(y)
			compareLogs(t, h.out, y.out)
			y.closeAll()
		})
	}
	_ = os.Getpid
}

// compareLogs reports every step where the model's log (yolk) differs
// from the host's (linux), and with -v prints the host's.
func compareLogs(t *testing.T, linux, yolk []string) {
	t.Helper()
	for i := range max(len(linux), len(yolk)) {
		var a, b string
		if i < len(linux) {
			a = linux[i]
		}
		if i < len(yolk) {
			b = yolk[i]
		}
		if a != b {
			t.Errorf("step %d:\n  linux: %s\n  yolk:  %s", i, a, b)
		}
	}
	if testing.Verbose() {
		t.Logf("%d steps:\n%s", len(linux), strings.Join(linux, "\n"))
	}
}
