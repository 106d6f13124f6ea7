package netsvc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"yolk/kernel/net"
)

// The service runs a round only when a source of work signals (netsvc.go:
// wake, rounds): these tests fail if a source does not, which the other hosted tests, whose
// TCP retransmissions rescue a stall, do not show.

// TestLoopKickOffLoop: frames the netstack queues from a goroutine not
// the loop's (as gVisor's timers and TCP processors do), while the loop
// idles or runs rounds for other traffic, each leave the service; a
// frame queued with no kick waits for traffic that may never come.
func TestLoopKickOffLoop(t *testing.T) {
	h := newHosted(t, hostedOpts{})
	dst := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(peerIP), Port: 9999}
	pl, err := gonet.DialUDP(h.peer, &dst, nil, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	sc, err := gonet.DialUDP(h.s.st, nil, &dst, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	// First alone (a lost kick is a datagram that never leaves), then
	// with other traffic that runs rounds now and then (a kick the
	// round suppressed while it would still look must not lose one).
	got := make([]byte, 64)
	var worst time.Duration
	var stop atomic.Bool
	var bg sync.WaitGroup
	defer func() { stop.Store(true); bg.Wait() }()
	for i := 0; i < 2000; i++ {
		if i == 500 {
			bg.Go(func() {
				rng := rand.New(rand.NewSource(1))
				for !stop.Load() {
					if n, _ := udpEchoes(t, h, 1, 20); n > 0 {
						t.Errorf("background echoes: %d lost", n)
						return
					}
					time.Sleep(time.Duration(rng.Intn(700)) * time.Microsecond)
				}
			})
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		t0 := time.Now()
		if _, err := sc.Write(b[:]); err != nil {
			t.Fatal(err)
		}
		pl.SetDeadline(time.Now().Add(2 * time.Second))
		for {
			n, err := pl.Read(got)
			if err != nil {
				t.Fatalf("datagram %d did not leave the service in 2 s: %v", i, err)
			}
			if n == 8 && binary.LittleEndian.Uint64(got) == uint64(i) {
				break
			}
		}
		worst = max(worst, time.Since(t0))
		if i%3 == 0 {
			time.Sleep(time.Duration(i%500) * time.Microsecond)
		}
	}
	stop.Store(true)
	bg.Wait()
	t.Logf("2000 datagrams from outside the loop; the slowest took %v", worst)
	h.finish()
}

// refusingKernel refuses (EAGAIN) 3 NICSendRecords in 10 and takes only
// the first record of another 2 in 10, at random with a fixed seed.
type refusingKernel struct {
	kernelCalls
	mu      sync.Mutex
	rnd     *rand.Rand
	refused atomic.Int64
}

func (k *refusingKernel) NICSendRecords(b []byte) (int, syscall.Errno) {
	k.mu.Lock()
	r := k.rnd.Intn(10)
	k.mu.Unlock()
	switch {
	case r < 3:
		k.refused.Add(1)
		return 0, unix.EAGAIN
	case r < 5 && len(b) >= 4:
		w := binary.LittleEndian.Uint32(b)
		if w&0x80000000 == 0 { // a plain frame: its record alone
			rec := (4 + int(w&0xffffff) + 3) &^ 3
			if rec < len(b) {
				return k.kernelCalls.NICSendRecords(b[:rec])
			}
		}
	}
	return k.kernelCalls.NICSendRecords(b)
}

// TestLoopKickTransmitFull: with the NIC's transmit queue refusing
// batches and taking parts of others, every echo still comes back
// (the retry timer kicks the loop: nothing else will while it waits).
func TestLoopKickTransmitFull(t *testing.T) {
	var rk *refusingKernel
	h := newHosted(t, hostedOpts{wrap: func(k kernelCalls) kernelCalls {
		rk = &refusingKernel{kernelCalls: k, rnd: rand.New(rand.NewSource(2))}
		return rk
	}})
	lost1, worst1 := udpEchoes(t, h, 1, 1000)
	lost4, worst4 := udpEchoes(t, h, 4, 300)
	t.Logf("one client: %d lost, slowest %v; four: %d lost, slowest %v; %d batches refused", lost1, worst1, lost4, worst4, rk.refused.Load())
	if lost1+lost4 > 0 {
		t.Errorf("%d echoes did not come back in a second", lost1+lost4)
	}
	if rk.refused.Load() == 0 {
		t.Errorf("no batch was refused: the test did not test")
	}
	h.finish()
}

// udpEchoes sends n datagrams from each of clients UDP sockets of the
// peer to the service's echo port, one at a time, and counts those not
// echoed within a second; it also gives the slowest echo.
func udpEchoes(t *testing.T, h *hosted, clients, n int) (lost int64, worst time.Duration) {
	var wg sync.WaitGroup
	var nlost atomic.Int64
	var mu sync.Mutex
	for c := 0; c < clients; c++ {
		dst := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(svcIP), Port: echoPort}
		u, err := gonet.DialUDP(h.peer, nil, &dst, ipv4.ProtocolNumber)
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		wg.Go(func() {
			defer u.Close()
			got := make([]byte, 2000)
			for i := 0; i < n; i++ {
				msg := []byte(fmt.Sprintf("c%d-%d", c, i))
				t0 := time.Now()
				u.SetDeadline(time.Now().Add(time.Second))
				u.Write(msg)
				for {
					k, err := u.Read(got)
					if err != nil {
						nlost.Add(1)
						break
					}
					if bytes.Equal(got[:k], msg) {
						mu.Lock()
						worst = max(worst, time.Since(t0))
						mu.Unlock()
						break
					}
				}
			}
		})
	}
	wg.Wait()
	return nlost.Load(), worst
}

// TestLoopPollsAgain: more sockets with work than a NetPoll takes (64),
// all signalled while the loop waits for the NIC's lock, are all served:
// the signals the eventfd's waiter took meanwhile are the loop's to act
// on (kernWork). It does not isolate a full poll's look again (round's
// more): the hosted kernel signals anew during the service's own calls,
// so it passes without that.
func TestLoopPollsAgain(t *testing.T) {
	h := newHosted(t, hostedOpts{})
	const socks = 200
	const port = 9998
	la := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(peerIP), Port: port}
	pl, err := gonet.DialUDP(h.peer, &la, nil, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	n := h.k.Sockets
	var fds []int
	h.s.nicMu.Lock() // the loop waits; the eventfd's waiter takes the signals
	for i := 0; i < socks; i++ {
		u, e := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, false)
		if e != 0 {
			h.s.nicMu.Unlock()
			t.Fatalf("socket %d: %v", i, e)
		}
		fds = append(fds, u)
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		to := net.Addr{Raw: sin4(peerIP, port)}
		if _, _, e := n.Send(u, &net.Iov{One: b[:], Len: len(b)}, 0, unix.MSG_DONTWAIT, &to); e != 0 {
			h.s.nicMu.Unlock()
			t.Fatalf("send %d: %v", i, e)
		}
	}
	time.Sleep(50 * time.Millisecond)
	h.s.nicMu.Unlock()
	seen := map[uint64]bool{}
	got := make([]byte, 64)
	pl.SetDeadline(time.Now().Add(3 * time.Second))
	for len(seen) < socks {
		k, err := pl.Read(got)
		if err != nil {
			t.Fatalf("%d datagrams of %d arrived: %v", len(seen), socks, err)
		}
		if k == 8 {
			seen[binary.LittleEndian.Uint64(got)] = true
		}
	}
	for _, u := range fds {
		n.Close(u)
	}
	h.finish()
}
