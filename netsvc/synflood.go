package netsvc

import (
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// SYN floods. Linux answers a SYN with a cookie, keeping nothing, once
// the listener's SYN queue holds its backlog, and goes on doing so while
// the queue stays full: a flood's request socks (a few hundred bytes
// each) wait out their SYN-ACK retransmissions, whether or not the
// spoofed addresses answer ARP. The netstack switches at the same
// bound (netsvc gives it the kernel's backlog: Go asks for 4,096), but
// its half-open connections are whole endpoints, and one whose peer
// does not answer ARP dies when the resolution fails (the failure comes
// back as a host-unreachable error, within 3 s): its place in the queue
// is free again, and the queue of a listener under a flood from silent
// addresses never filled ("SYN cookies sent 0"). Under TCG that churn
// (an endpoint made, its SYN-ACK queued for ARP, the error, the
// teardown) is slower than the SYNs come: the guest stopped answering
// for half a minute and more after a 5 s flood (docs/security.md, "SYN
// flood: cookies").
//
// So the service turns cookies on for every SYN to every listener when
// a listener's queue overflows (the netstack sent a cookie) or when
// synFloodIncomplete SYNs to listening ports came off the NIC within a
// second beyond the connections completed meanwhile (a flood: SYNs
// that make no connection), and keeps them on until synFloodQuiet
// seconds in a row in each of which fewer than synFloodTrickle SYNs got
// one. (A smaller SYN queue for the netstack, 128, made cookies start
// sooner but also overflowed in 10,000 honest connections opening
// through QEMU's user network on a slow guest, whose SYNs then waited;
// and "fewer than 128 SYNs a second" as the end turned cookies off in
// the middle of a flood that a TCG guest on a loaded host took in at 60
// a second.) While it lasts, connections lose window scaling and SACK
// (the netstack's cookies do not encode them), as Linux's do without
// timestamps.
const (
	synFloodCheck      = time.Second // how often the service looks whether a flood is over
	synFloodQuiet      = 5
	synFloodTrickle    = 16
	synFloodIncomplete = 512
)

// Early drops. A cookie still costs the guest about 1.5 ms of CPU under
// TCG (the route, the SYN-ACK queued for ARP, the ARP failure's error),
// a listener answers its SYNs one at a time, and the netstack queues a
// segment without payload to a listener whatever its receive buffer
// says: the SYNs a flood left in the guest took 11–15 s to answer after
// it ended, and a health check's SYN waited behind them. While cookies
// are on for every SYN, the service passes at most synFloodInFlight
// SYNs to listening ports to the netstack that the listeners have not
// answered yet (with a cookie, or dropped for a full accept queue) and
// drops the rest as they come off the NIC, before the netstack spends
// anything on them, as Linux's backlog of received packets drops what a
// CPU cannot take. A second without a SYN answered forgets the count
// (SYNs the netstack discarded without an answer, a bad checksum, say,
// would otherwise hold it up for good). A SYN from an address that
// completed a connection lately (a proven peer, as Linux calls it: up
// to synFloodProven of them) is never dropped early: a flood's spoofed
// addresses complete none, and a client that has been served keeps
// being served during one (its SYN would otherwise be lost with the
// flood's, at the flood's odds, and sent again a second or more later).
const (
	synFloodInFlight = 64
	synFloodProven   = 1024
)

type synFlood struct {
	st *stack.Stack

	mu       sync.Mutex
	every    time.Duration // synFloodCheck (0), or a hosted test's (it calls check itself)
	on       bool
	quiet    int    // checks in a row with fewer than synFloodTrickle cookies
	seen     uint64 // cookies sent when last looked
	timer    *time.Timer
	engaged  uint64 // times cookies were turned on for every SYN
	admitted int64  // SYNs to listening ports passed to the netstack while on
	base     uint64 // answered() when admitted was last zero
	lastAns  uint64 // answered() at the last check
	dropped  uint64 // SYNs dropped early, ever

	onFlag atomic.Bool       // on, for admit's look without the lock
	ports  map[uint16]int    // the listeners' ports (the service loop's)
	peers  map[[16]byte]bool // proven peers' addresses (the service loop's)

	// The current second's SYNs to listening ports and connections
	// completed (the service loop's); winLen, if set, is a hosted
	// test's second.
	winLen    time.Duration
	winStart  time.Time
	winSYNs   int
	winOpened uint64 // PassiveConnectionOpenings at winStart
}

func (f *synFlood) cookies() uint64 { return f.st.Stats().TCP.ListenOverflowSynCookieSent.Value() }

// answered counts SYNs the netstack's listeners answered with a cookie or
// dropped for a full accept queue.
func (f *synFlood) answered() uint64 {
	t := f.st.Stats().TCP
	return t.ListenOverflowSynCookieSent.Value() + t.ListenOverflowSynDrop.Value()
}

// listen and unlisten are the service loop's: a listener on port came
// or went.
func (f *synFlood) listen(port uint16) {
	if f.ports == nil {
		f.ports = map[uint16]int{}
	}
	f.ports[port]++
}

func (f *synFlood) unlisten(port uint16) {
	if f.ports[port]--; f.ports[port] <= 0 {
		delete(f.ports, port)
	}
}

// proven is the service loop's: a connection from a came through a
// listener.
func (f *synFlood) proven(a tcpip.Address) {
	if f.peers == nil || len(f.peers) >= synFloodProven && !f.peers[ip16(a)] {
		f.peers = map[[16]byte]bool{} // full: start again
	}
	f.peers[ip16(a)] = true
}

// admit is framesIn's, for each frame that came in: false drops a SYN
// to a listening port while synFloodInFlight are unanswered and cookies
// are on for every SYN.
func (f *synFlood) admit(frame []byte) bool {
	if len(f.ports) == 0 {
		return true
	}
	port, src, ok := synPort(frame)
	if !ok || f.ports[port] == 0 {
		return true
	}
	if !f.onFlag.Load() {
		if f.winSYNs++; f.winSYNs >= synFloodIncomplete {
			f.look() // a flood may have begun: now, not after the batch
		}
		return true
	}
	a := f.answered()
	f.mu.Lock()
	defer f.mu.Unlock()
	if inFlight := f.admitted - int64(a-f.base); inFlight < 0 {
		// SYNs that were in the netstack before the count began.
		f.admitted, f.base = 0, a
	} else if inFlight >= synFloodInFlight && !f.peers[src] {
		f.dropped++
		return false
	}
	f.admitted++
	return true
}

// synPort is the destination port and the source address (as ip16
// gives it) of frame if it is a TCP SYN (not a SYN-ACK) in IPv4 (not a
// fragment) or IPv6 (TCP the first header).
func synPort(f []byte) (port uint16, src [16]byte, ok bool) {
	if len(f) < 14 {
		return 0, src, false
	}
	var tcp []byte
	switch uint16(f[12])<<8 | uint16(f[13]) {
	case 0x0800:
		ip := f[14:]
		if len(ip) < 20 || ip[9] != 6 || (uint16(ip[6])<<8|uint16(ip[7]))&0x3fff != 0 {
			return 0, src, false
		}
		src = ip16(tcpip.AddrFrom4([4]byte(ip[12:16])))
		tcp = ip[min(int(ip[0]&15)*4, len(ip)):]
	case 0x86dd:
		ip := f[14:]
		if len(ip) < 40 || ip[6] != 6 {
			return 0, src, false
		}
		src = [16]byte(ip[8:24])
		tcp = ip[40:]
	default:
		return 0, src, false
	}
	if len(tcp) < 20 || tcp[13]&0x17 != 0x02 { // SYN, and not ACK, RST or FIN
		return 0, src, false
	}
	return uint16(tcp[2])<<8 | uint16(tcp[3]), src, true
}

// look is the service loop's, after frames came in: with cookies not
// yet on for every SYN, a cookie sent since the last look (a listener's
// queue overflowed) or synFloodIncomplete SYNs this second beyond the
// connections completed turn them on.
func (f *synFlood) look() {
	if f.onFlag.Load() {
		return
	}
	c := f.cookies()
	opened := f.st.Stats().TCP.PassiveConnectionOpenings.Value()
	if now := time.Now(); now.Sub(f.winStart) >= max(f.winLen, time.Second) {
		f.winStart, f.winSYNs, f.winOpened = now, 0, opened
	}
	incomplete := f.winSYNs - int(opened-f.winOpened)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on || c == f.seen && incomplete < synFloodIncomplete {
		f.seen = c
		return
	}
	f.winSYNs, f.winOpened = 0, opened
	f.on, f.seen, f.quiet = true, c, 0
	f.admitted, f.base = 0, f.answered()
	f.lastAns = f.base
	f.onFlag.Store(true)
	f.engaged++
	f.set(true)
	if f.timer == nil {
		f.timer = time.AfterFunc(f.interval(), f.check)
	} else {
		f.timer.Reset(f.interval())
	}
}

func (f *synFlood) interval() time.Duration {
	if f.every == 0 {
		return synFloodCheck
	}
	return f.every
}

// check runs every synFloodCheck while cookies are on.
func (f *synFlood) check() {
	c, a := f.cookies(), f.answered()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return
	}
	if a == f.lastAns { // nothing answered in a second: forget the count
		f.admitted, f.base = 0, a
	}
	f.lastAns = a
	if c-f.seen >= synFloodTrickle {
		f.quiet = 0
	} else if f.quiet++; f.quiet >= synFloodQuiet {
		f.on, f.seen = false, c
		f.onFlag.Store(false)
		f.set(false)
		return
	}
	f.seen = c
	f.timer.Reset(f.interval())
}

func (f *synFlood) set(on bool) {
	v := tcpip.TCPAlwaysUseSynCookies(on)
	f.st.SetTransportProtocolOption(tcp.ProtocolNumber, &v)
}

// stop ends the timer (the service stops).
func (f *synFlood) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
	f.on = false
	f.onFlag.Store(false)
}
