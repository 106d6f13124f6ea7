package netsvc

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// SYN floods. Linux answers a SYN with a cookie, keeping nothing, once
// the listener's SYN queue is full, and goes on doing so while the
// queue stays full: a flood's request socks wait out their SYN-ACK
// retransmissions, whether or not the spoofed addresses answer ARP.
// The netstack's half-open connections are whole endpoints, and one
// whose peer does not answer ARP dies when the resolution fails (the
// failure comes back as a host-unreachable error, within 3 s): its
// place in the queue is free again, the next SYN makes another endpoint,
// and the queue of a listener under a flood from silent addresses is
// seldom full. Under TCG that churn (an endpoint made, its SYN-ACK
// queued for ARP, the error, the teardown) is slower than the SYNs
// come: the guest stopped answering for half a minute after a 5 s flood
// (docs/security.md, "SYN flood").
//
// So the service keeps cookies on, for every listener, from the moment
// a listener's queue overflows (the netstack sent a cookie) until
// synFloodQuiet seconds in a row in each of which fewer than
// synFloodTrickle SYNs got one: the flood is over. (A bound nearer the
// queue's, "fewer than synBacklog a second", turned cookies off in the
// middle of a flood: a TCG guest on a loaded host took in only 60 SYNs a
// second, and each time 128 endpoints were made again before the
// queue overflowed.) While it lasts, connections lose window scaling
// and SACK (the netstack's cookies do not encode them), as Linux's do
// without timestamps.
const (
	synFloodCheck   = time.Second // how often the service looks whether a flood is over
	synFloodQuiet   = 5
	synFloodTrickle = 16
)

type synFlood struct {
	st *stack.Stack

	mu      sync.Mutex
	every   time.Duration // synFloodCheck (0), or a hosted test's (it calls check itself)
	on      bool
	quiet   int    // checks in a row with fewer than synFloodTrickle cookies
	seen    uint64 // cookies sent when last looked
	timer   *time.Timer
	engaged uint64 // times cookies were turned on for every SYN
}

func (f *synFlood) cookies() uint64 { return f.st.Stats().TCP.ListenOverflowSynCookieSent.Value() }

// look is the service loop's, after frames came in: a cookie sent since
// the last look, with cookies not yet on for every SYN, is a listener's
// queue overflowing.
func (f *synFlood) look() {
	c := f.cookies()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on || c == f.seen {
		return
	}
	f.on, f.seen, f.quiet = true, c, 0
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
	c := f.cookies()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return
	}
	if c-f.seen >= synFloodTrickle {
		f.quiet = 0
	} else if f.quiet++; f.quiet >= synFloodQuiet {
		f.on, f.seen = false, c
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
}
