package netsvc

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// Connections that linger after their close, bounded as Linux bounds
// them.
//
// The netstack keeps a connection this side closed first in TIME_WAIT
// for 60 s, a whole endpoint (about 2.5 KiB of heap) and its timer each.
// A server that closes first (HTTP/1.0, "Connection: close") at 1,000
// connections a second would hold 60,000 of them: 150 MB, more than a
// 128 MiB machine has. Under TCG it never got there: with 55 MiB of
// endpoints after 10 s the garbage collector ran ever more often, and
// new connections fell from 1,160 to 840 a second in the next 10 s
// (1,240 with the bound). Linux holds at most
// tcp_max_tw_buckets connections in TIME_WAIT (half the established
// hash's entries: 512 on a 128 MiB machine) and closes the rest at once
// ("TCP: time wait bucket table overflow"). The service does the same:
// while twCap or more of the netstack's connections are closing
// (connected but not established: FIN_WAIT, TIME_WAIT, CLOSE_WAIT,
// LAST_ACK, CLOSING — gVisor counts no TIME_WAIT alone), a connection
// that enters TIME_WAIT leaves it at once; below, it stays the 60 s.
// The netstack reads the option when a connection enters TIME_WAIT, and
// each round sets it (timeWaitCheck), so the bound holds to within the
// connections closed between two rounds. Two differences from Linux:
// the count takes in every closing state, not TIME_WAIT and orphaned
// FIN_WAIT2 alone, so the bound comes sooner (a program slow to close
// connections its peers closed counts too); and while the bound holds,
// a segment that reaches a connection already in TIME_WAIT ends it
// (gVisor's handleTimeWait resets the timer to the option's value).

// timeWaitCap is Linux's tcp_max_tw_buckets for a machine of mem bytes
// (tcp_init): half the established hash's entries, one per 128 KiB of
// memory rounded up to a power of two, at least a page of them (512),
// at most 512 Ki.
func timeWaitCap(mem uint64) int64 {
	n := uint64(512)
	for n < mem>>17 && n < 512<<10 {
		n <<= 1
	}
	return int64(n / 2)
}

// memTotal is MemTotal of /proc/meminfo in bytes; 128 MiB, yolk's
// default machine, if it cannot be read.
func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err == nil && kb > 0 {
					return kb << 10
				}
			}
		}
	}
	return 128 << 20
}

// timeWaitCheck sets the netstack's TIME_WAIT to none while twCap or
// more connections are closing, to 60 s (tcp.DefaultTCPTimeWaitTimeout)
// below. A round calls it (under nicMu, as twShort needs).
func (s *service) timeWaitCheck() {
	closing := int64(s.tcpConnected.Value()) - int64(s.tcpEstablished.Value())
	if short := closing >= s.twCap; short != s.twShort {
		s.twShort = short
		d := tcpip.TCPTimeWaitTimeoutOption(tcp.DefaultTCPTimeWaitTimeout)
		if short {
			d = 0
		}
		s.st.SetTransportProtocolOption(tcp.ProtocolNumber, &d)
	}
}
