package netsvc

// The connections: a kernel socket served by a netstack endpoint — made,
// watched, fed both ways, accepted, closed and released (the loop of
// netsvc.go calls in here on each event and each endpoint's readiness).

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"

	"yolk/kernel/abi"
)

// conn is a kernel socket the service serves, and its endpoint.
type conn struct {
	id       uint64
	typ      uint8
	ep       tcpip.Endpoint
	wq       *waiter.Queue
	entry    waiter.Entry
	listener bool
	lport    uint16 // a listener's port

	connecting bool
	rx         []byte // received, not yet taken by the kernel
	rxFull     bool   // the kernel's ring was full: wait for NetOpRxRoom
	tx         []byte // taken from the kernel, not yet accepted by the endpoint
	txLeft     int    // bytes the kernel's ring still held at the last NetTx
	txMore     bool   // the kernel may have more (NetOpTx)
	shutWr     bool   // send a FIN once tx is empty
	orphaned   bool   // closed: the user timeout bounds what is left
	closing    bool   // close once tx is empty
	finSent    bool
	eof        bool // the peer's FIN went to the kernel
	held       tcpip.Endpoint
	heldWQ     *waiter.Queue
	heldPeer   tcpip.FullAddress
	// rxLater is set by rxTimer, started when the kernel had no page for
	// an empty ring's first bytes (ENOBUFS): no reader will make room
	// and say so, so the service tries again after rxRetry.
	rxLater atomic.Bool
	rxTimer *time.Timer
}

func addr(ip [16]byte, port uint16) tcpip.FullAddress {
	if bytes.Equal(ip[:12], v4Mapped([4]byte{})[:12]) {
		a := tcpip.FullAddress{Port: port}
		if [4]byte(ip[12:]) != [4]byte{} {
			a.Addr = tcpip.AddrFrom4([4]byte(ip[12:]))
		}
		return a
	}
	a := tcpip.FullAddress{Port: port}
	if ip != [16]byte{} {
		a.Addr = tcpip.AddrFrom16(ip)
	}
	if header.IsV6LinkLocalUnicastAddress(a.Addr) {
		a.NIC = nicID // the netstack routes link-local addresses only on a NIC named; there is one
	}
	return a
}

func ip16(a tcpip.Address) [16]byte {
	var r [16]byte
	if a.Len() == 4 {
		copy(r[:], v4Mapped(a.As4()))
	} else if a.Len() == 16 {
		r = a.As16()
	}
	return r
}

func (s *service) newConn(ev *abi.NetEvent, proto tcpip.TransportProtocolNumber) (*conn, error) {
	c := &conn{id: ev.Sock, typ: ev.Typ, wq: new(waiter.Queue)}
	netProto := ipv4.ProtocolNumber
	if ev.Family == unix.AF_INET6 {
		netProto = ipv6.ProtocolNumber
	}
	ep, e := s.st.NewEndpoint(proto, netProto, c.wq)
	if e != nil {
		return nil, fmt.Errorf("%v", e)
	}
	if ev.Family == unix.AF_INET6 {
		ep.SocketOptions().SetV6Only(ev.V6Only != 0)
	}
	ep.SocketOptions().SetReuseAddress(true)
	c.ep = ep
	s.watch(c)
	s.conns[c.id] = c
	return c, nil
}

func (s *service) watch(c *conn) {
	c.entry = waiter.NewFunctionEntry(waiter.EventIn|waiter.EventOut|waiter.EventErr|waiter.EventHUp, func(waiter.EventMask) {
		s.markDirty(c)
	})
	c.wq.EventRegister(&c.entry)
}

// event starts what the kernel asks for one socket.
func (s *service) event(ev *abi.NetEvent) {
	c := s.conns[ev.Sock]
	ops := ev.Ops
	if c != nil && ops&abi.NetOpConnect != 0 && c.typ == unix.SOCK_STREAM {
		// A socket connecting again (its last connection failed or was
		// reset): a fresh endpoint; the old one goes.
		c.ep.Abort()
		s.forget(c)
		c = nil
	}
	if c != nil && ops&abi.NetOpAbort != 0 && ops&(abi.NetOpListen|abi.NetOpBind|abi.NetOpDgram) != 0 {
		// Stopped and started again before the service looked (a
		// listener shut down, then listening again): the old endpoint
		// goes first, the new request gets a fresh one, and the socket
		// stays the service's (no NetRelease).
		s.abortHeld(c)
		c.ep.Abort()
		s.forget(c)
		c = nil
		ops &^= abi.NetOpAbort
	}
	if c == nil && ops&(abi.NetOpConnect|abi.NetOpListen|abi.NetOpBind|abi.NetOpDgram) != 0 {
		proto := tcp.ProtocolNumber
		if ev.Typ == unix.SOCK_DGRAM {
			proto = udp.ProtocolNumber
		}
		var err error
		if c, err = s.newConn(ev, proto); err != nil {
			s.fail(ev.Sock, ops, syscall.ENOBUFS)
			return
		}
		local := addr(ev.Local, ev.LPort)
		if e := c.ep.Bind(local); e != nil && ops&abi.NetOpConnect == 0 {
			fmt.Fprintf(os.Stderr, "netsvc: bind %v: %v\n", local, e)
		}
	}
	if c == nil {
		if ops&(abi.NetOpClose|abi.NetOpAbort) != 0 {
			s.call(&abi.NetCall{Op: abi.NetRelease, Sock: ev.Sock})
		}
		return
	}
	if ops&abi.NetOpConnect != 0 {
		c.connecting = true
		if e := c.ep.Connect(addr(ev.Remote, ev.RPort)); e != nil {
			if _, ok := e.(*tcpip.ErrConnectStarted); !ok {
				c.connecting = false
				s.call(&abi.NetCall{Op: abi.NetConnected, Sock: c.id, Errno: int32(errno(e))})
			}
		}
	}
	if ops&abi.NetOpListen != 0 {
		if e := c.ep.Listen(int(ev.Backlog) + 1); e != nil {
			fmt.Fprintf(os.Stderr, "netsvc: listen on port %d: %v\n", ev.LPort, e)
		}
		if !c.listener {
			if a, e := c.ep.GetLocalAddress(); e == nil {
				c.lport = a.Port
				s.flood.listen(a.Port)
			}
		}
		c.listener = true
	}
	if ops&(abi.NetOpTx|abi.NetOpDgram) != 0 {
		c.txMore = true
	}
	if ops&abi.NetOpShutWr != 0 {
		c.shutWr = true
	}
	if ops&abi.NetOpRxRoom != 0 {
		c.rxFull = false
	}
	if ops&abi.NetOpAbort != 0 {
		s.abortHeld(c)
		c.ep.Abort()
		s.release(c)
		return
	}
	if ops&abi.NetOpClose != 0 {
		c.closing, c.shutWr = true, true
		c.txMore = true
	}
	s.serve(c)
}

// abortHeld drops the connection a listener holds for the kernel's full
// queue.
func (s *service) abortHeld(c *conn) {
	if c.held != nil {
		c.held.Abort()
		c.held = nil
	}
}

func (s *service) fail(id uint64, ops uint32, e syscall.Errno) {
	if ops&abi.NetOpConnect != 0 {
		s.call(&abi.NetCall{Op: abi.NetConnected, Sock: id, Errno: int32(e)})
	}
}

func (s *service) release(c *conn) {
	s.forget(c)
	s.mu.Lock()
	delete(s.dirty, c)
	s.mu.Unlock()
	s.call(&abi.NetCall{Op: abi.NetRelease, Sock: c.id})
}

// forget drops the service's record of c.
func (s *service) forget(c *conn) {
	c.wq.EventUnregister(&c.entry)
	delete(s.conns, c.id)
	if c.listener {
		s.flood.unlisten(c.lport)
	}
}

// serve moves what can move for one socket.
func (s *service) serve(c *conn) {
	if s.conns[c.id] != c {
		return
	}
	switch {
	case c.listener && c.closing:
		s.abortHeld(c)
		c.ep.Close()
		s.release(c)
	case c.listener:
		s.accept(c)
	case c.typ == unix.SOCK_DGRAM:
		s.dgrams(c)
	default:
		s.stream(c)
	}
}

func (s *service) accept(c *conn) {
	for {
		if c.held == nil {
			var peer tcpip.FullAddress
			ep, wq, e := c.ep.Accept(&peer)
			if e != nil {
				return
			}
			c.held, c.heldWQ, c.heldPeer = ep, wq, peer
			s.flood.proven(peer.Addr)
		}
		local, _ := c.held.GetLocalAddress()
		a := abi.NetCall{Op: abi.NetAccepted, Sock: c.id, LPort: local.Port, RPort: c.heldPeer.Port,
			Local: ip16(local.Addr), Remote: ip16(c.heldPeer.Addr)}
		if err := s.call(&a); err != nil {
			if err == syscall.EAGAIN {
				return // NetOpAcceptRoom comes
			}
			c.held.Abort()
			c.held = nil
			continue
		}
		n := &conn{id: a.Sock, typ: unix.SOCK_STREAM, ep: c.held, wq: c.heldWQ} // the accepted endpoint reports to the queue Accept gave
		s.watch(n)
		s.conns[n.id] = n
		c.held = nil
		s.stream(n)
	}
}

// rxWriter takes a stream endpoint's bytes into its socket's receive
// ring in the kernel (NetRx) as the endpoint's Read hands them over, so
// the bytes are not copied into the service first. A view of rxDirect
// bytes or more (the host's coalesced segments, behind a tap) goes to
// the kernel straight from the netstack's buffer; when the ring takes
// only part of it, Write says so and the rest stays in the endpoint
// (gVisor's Read consumes what the writer took, no more). Smaller views
// (a frame's payload each) are gathered into buf, up to chunk, and go in
// one call: a call for each would cost more than the copy. Gathered
// bytes the ring does not take are the caller's to keep.
type rxWriter struct {
	k    kernelCalls
	sock uint64
	buf  []byte // gathered, not yet taken (the endpoint counts them read)
	full bool   // the ring took less than it was given: NetOpRxRoom comes
	// nobufs: the kernel had no page for the ring's first bytes
	// (ENOBUFS); full is set too, but no NetOpRxRoom comes.
	nobufs bool
	err    error // a NetRx failed: the socket is done
}

// rxDirect is the size from which a view goes to the kernel as it is.
const rxDirect = 4 << 10

var errRxFull = errors.New("the socket's ring is full")

func (w *rxWriter) start(sock uint64) {
	w.sock, w.buf, w.full, w.nobufs, w.err = sock, w.buf[:0], false, false, nil
}

func (w *rxWriter) Write(p []byte) (int, error) {
	if len(p) < rxDirect && len(w.buf)+len(p) <= chunk && !w.full && w.err == nil {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if !w.flush() {
		return 0, errRxFull
	}
	if len(p) < rxDirect {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if n := w.give(p); n < len(p) {
		return n, errRxFull
	}
	return len(p), nil
}

// flush gives the gathered bytes to the ring: false if it did not take
// them all (what it did not take stays at buf's front).
func (w *rxWriter) flush() bool {
	if w.full || w.err != nil {
		return false
	}
	if len(w.buf) == 0 {
		return true
	}
	n := w.give(w.buf)
	w.buf = w.buf[:copy(w.buf, w.buf[n:])]
	return len(w.buf) == 0
}

// give is one NetRx: the bytes the ring took.
func (w *rxWriter) give(p []byte) int {
	r, e := w.k.Net(abi.NetCall{Op: abi.NetRx, Sock: w.sock}, p)
	if e == unix.ENOBUFS {
		w.full, w.nobufs = true, true
		return 0
	}
	if e != 0 {
		w.err = e
		return 0
	}
	if int(r.N) < len(p) {
		w.full = true
	}
	return int(r.N)
}

// txReader is what a stream endpoint's Write reads: first pre, the
// bytes a NetTx already took into the service's buffer, then the rest
// of the socket's transmit ring, with a NetTx into the netstack's own
// buffer for each read. Len is what the kernel said waits, so the
// netstack sizes its buffers to it and reads no more than it can queue.
//
// gVisor reads exactly min(Len, its room) bytes: an end of file before
// that makes its read loop spin forever (View.ReadFrom takes EOF for
// success). So a ring that holds fewer bytes than Left said — the
// kernel threw them away: a close with bytes unread, a disconnect — or
// a failing NetTx is an error (short), and the endpoint queues none of
// the round's bytes (ErrBadBuffer); the socket dropped them anyway.
type txReader struct {
	k     kernelCalls
	sock  uint64
	pre   []byte
	left  int  // bytes still in the kernel's ring
	n     int  // bytes read
	asked bool // a NetTx was made: left is the kernel's word of now
	short bool // the ring had fewer bytes than promised, or a NetTx failed
}

var errTxShort = errors.New("the socket's transmit ring holds fewer bytes than it said")

// txFirst bounds the first NetTx of a stream's round, which goes through
// the service's buffer: an answer of a few hundred bytes needs no second
// call, and bulk data goes straight to the netstack's buffers.
const txFirst = 4 << 10

func (r *txReader) start(sock uint64, pre []byte, left int) {
	r.sock, r.pre, r.left, r.n, r.asked, r.short = sock, pre, left, 0, false, false
}

func (r *txReader) Len() int { return len(r.pre) + r.left }

func (r *txReader) Read(p []byte) (int, error) {
	if len(r.pre) > 0 {
		k := copy(p, r.pre)
		r.pre, r.n = r.pre[k:], r.n+k
		return k, nil
	}
	if r.left == 0 || r.short {
		r.short = true // asked for more than Len: the ring gave less
		return 0, errTxShort
	}
	if len(p) == 0 {
		return 0, nil
	}
	t, e := r.k.Net(abi.NetCall{Op: abi.NetTx, Sock: r.sock}, p[:min(len(p), r.left)])
	r.asked = true
	if e != 0 || t.N == 0 {
		r.short, r.left = true, 0
		return 0, errTxShort
	}
	r.left, r.n = int(t.Left), r.n+int(t.N)
	return int(t.N), nil
}

func (s *service) stream(c *conn) {
	if c.connecting {
		if c.ep.Readiness(waiter.EventOut|waiter.EventErr|waiter.EventHUp) == 0 {
			return
		}
		c.connecting = false
		e := c.ep.LastError()
		s.call(&abi.NetCall{Op: abi.NetConnected, Sock: c.id, Errno: int32(errno(e))})
		if e != nil {
			s.drop(c)
			return
		}
	}
	// Receive: from the endpoint to the kernel's ring.
	if c.rxLater.Swap(false) {
		c.rxFull = false
	}
	for !c.rxFull && !c.eof {
		if len(c.rx) > 0 { // what the ring could not take last time
			r := abi.NetCall{Op: abi.NetRx, Sock: c.id}
			if err := s.callBuf(&r, c.rx); err == unix.ENOBUFS {
				c.rxFull = true
				s.retryRx(c)
				break
			} else if err != nil {
				s.drop(c)
				return
			}
			if c.rx = c.rx[r.N:]; len(c.rx) > 0 {
				c.rxFull = true
				break
			}
			c.rx = nil
		}
		w := &s.rxw
		w.start(c.id)
		res, e := c.ep.Read(w, tcpip.ReadOptions{})
		w.flush()
		if w.err != nil {
			s.drop(c)
			return
		}
		if len(w.buf) > 0 {
			c.rx = bytes.Clone(w.buf) // read from the endpoint, not taken by the ring: kept here
		}
		if w.full {
			c.rxFull = true
			if w.nobufs {
				s.retryRx(c)
			}
			break
		}
		if e != nil {
			switch e.(type) {
			case *tcpip.ErrWouldBlock:
			case *tcpip.ErrClosedForReceive:
				c.eof = true
				s.call(&abi.NetCall{Op: abi.NetFin, Sock: c.id})
			default:
				s.call(&abi.NetCall{Op: abi.NetReset, Sock: c.id, Errno: int32(errno(e))})
				s.drop(c)
				return
			}
			break
		}
		if res.Count == 0 {
			break
		}
	}
	// Send: from the kernel's ring to the endpoint. Not knowing how many
	// bytes wait, the service takes up to txFirst into its buffer, and the
	// kernel says how many more wait (Left); the endpoint's Write reads
	// those through txReader, from the kernel's ring straight into the
	// netstack's buffers.
	for {
		shared := false // c.tx is in s.buf
		if len(c.tx) == 0 && c.txMore && c.txLeft == 0 {
			t := abi.NetCall{Op: abi.NetTx, Sock: c.id}
			if err := s.callBuf(&t, s.buf[:txFirst]); err != nil || t.N == 0 {
				c.txMore = false
			} else {
				c.tx, c.txLeft, shared = s.buf[:t.N], int(t.Left), true
			}
		}
		if len(c.tx) == 0 && (!c.txMore || c.txLeft == 0) {
			break
		}
		r := &s.txr
		r.start(c.id, c.tx, c.txLeft)
		n, e := c.ep.Write(r, tcpip.WriteOptions{})
		if r.short {
			// The kernel threw the ring's bytes away (or the call failed):
			// the endpoint queued none of this round's, and nothing more
			// is to be sent before the socket's next events.
			c.tx, c.txMore, c.txLeft = nil, false, 0
			break
		}
		if int(n) != r.n && e == nil {
			// Bytes taken from the kernel's ring that the endpoint did not
			// queue are lost: only this goroutine writes to it, so it
			// does not happen; if it did, the stream is broken.
			s.call(&abi.NetCall{Op: abi.NetReset, Sock: c.id, Errno: int32(unix.EIO)})
			s.drop(c)
			return
		}
		c.txLeft = r.left
		if c.txLeft == 0 && (shared || r.asked) {
			// The kernel's ring was empty at a NetTx of this round, after
			// the round's events: a NetOpTx comes with the next bytes.
			// (A Left from an earlier round is stale: not enough.)
			c.txMore, c.txLeft = false, 0
		}
		switch {
		case len(r.pre) == 0:
			c.tx = nil
		case shared:
			c.tx = bytes.Clone(r.pre) // the endpoint's buffer was full; s.buf is the next connection's
		default:
			c.tx = r.pre
		}
		if e != nil {
			if _, ok := e.(*tcpip.ErrWouldBlock); !ok {
				s.call(&abi.NetCall{Op: abi.NetReset, Sock: c.id, Errno: int32(errno(e))})
				s.drop(c)
				return
			}
			return // EventOut comes
		}
	}
	if c.closing && !c.orphaned {
		// Closed with bytes still to send: bounded, as Linux bounds an
		// orphan (a peer that never reads does not pin the socket).
		c.orphaned = true
		ut := tcpip.TCPUserTimeoutOption(orphanTimeout)
		c.ep.SetSockOpt(&ut)
	}
	if c.shutWr && !c.finSent {
		c.finSent = true
		c.ep.Shutdown(tcpip.ShutdownWrite)
	}
	if c.closing {
		c.ep.Close()
		s.release(c)
	}
}

// drop forgets a connection that failed; the kernel's close releases it.
// retryRx serves c again after rxRetry: the kernel had no page for the
// first bytes of its empty ring (ENOBUFS).
func (s *service) retryRx(c *conn) {
	if c.rxTimer != nil {
		c.rxTimer.Reset(rxRetry)
		return
	}
	c.rxTimer = time.AfterFunc(rxRetry, func() {
		c.rxLater.Store(true)
		s.markDirty(c)
	})
}

const rxRetry = 20 * time.Millisecond

func (s *service) drop(c *conn) {
	c.eof = true
	c.rx, c.tx, c.txMore, c.txLeft = nil, nil, false, 0
	if c.closing {
		c.ep.Abort()
		s.release(c)
	}
}

func (s *service) dgrams(c *conn) {
	in := &s.dgramIn
	for {
		in.buf.Reset()
		in.w = tcpip.LimitedWriter{W: &in.buf, N: maxDgram}
		res, e := c.ep.Read(&in.w, tcpip.ReadOptions{NeedRemoteAddr: true})
		if e != nil {
			break
		}
		call := abi.NetCall{Op: abi.NetDgramIn, Sock: c.id, Remote: ip16(res.RemoteAddr.Addr), RPort: res.RemoteAddr.Port}
		s.callBuf(&call, in.buf.Bytes())
	}
	// Only after the kernel said datagrams wait (NetOpDgram, at every
	// send), and only while it says more do: a call that finds none
	// is one a datagram coming in would otherwise cost.
	out := s.buf[:maxDgram] // the endpoint copies what it is given
	for c.txMore {
		o := abi.NetCall{Op: abi.NetDgramOut, Sock: c.id}
		if err := s.callBuf(&o, out); err != nil {
			c.txMore = false
			break
		}
		c.txMore = o.Left != 0
		to := addr(o.Remote, o.RPort)
		c.ep.Write(bytes.NewReader(out[:o.N]), tcpip.WriteOptions{To: &to})
	}
	if c.closing {
		c.ep.Close()
		s.release(c)
	}
}

// errno is a netstack error as the socket calls give it.
func errno(e tcpip.Error) syscall.Errno {
	switch e.(type) {
	case nil:
		return 0
	case *tcpip.ErrConnectionRefused:
		return syscall.ECONNREFUSED
	case *tcpip.ErrConnectionReset:
		return syscall.ECONNRESET
	case *tcpip.ErrConnectionAborted:
		return syscall.ECONNABORTED
	case *tcpip.ErrTimeout:
		return syscall.ETIMEDOUT
	case *tcpip.ErrNetworkUnreachable:
		return syscall.ENETUNREACH
	case *tcpip.ErrHostUnreachable:
		return syscall.EHOSTUNREACH
	case *tcpip.ErrPortInUse:
		return syscall.EADDRINUSE
	}
	return syscall.EIO
}
