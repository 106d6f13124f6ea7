package net

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// FuzzService drives the kernel's half of abi.SysNet with arbitrary calls
// — any operation, a socket identity that names a live, closed, released
// or no socket, arbitrary lengths, errors, addresses and bytes — between
// socket calls of the program, and checks that nothing panics and that
// every ring stays within its bounds. (The guest's system-call fuzzer
// does not make this call: a random NetPoll would take the running
// service's work, a random NetOffline would let traffic out.) The seed
// corpus runs in go test; go test -fuzz=FuzzService explores.
func FuzzService(f *testing.F) {
	f.Add([]byte{abi.NetConnected, 0, 0, 0, abi.NetTx, 0, 8, 0, abi.NetRx, 1, 40, 0, abi.NetFin, 0, 0, 0})
	f.Add([]byte{abi.NetAccepted, 2, 0, 0, abi.NetDgramOut, 3, 64, 0, abi.NetDgramIn, 3, 9, 0, abi.NetRelease, 3, 0, 0})
	f.Add([]byte{abi.NetRx, 2, 200, 1, abi.NetTx, 3, 255, 9, abi.NetReset, 0, 0, 1, abi.NetPoll, 0, 3, 0, abi.NetRelease, 0, 0, 0})
	f.Add([]byte{abi.NetDgramIn, 2, 0, 0xff, abi.NetDgramIn, 2, 0, 0xff, abi.NetDgramIn, 2, 9, 1, abi.NetDgramIn, 2, 9, 5})
	f.Add([]byte{99, 7, 7, 7, abi.NetAddr6, 0, 64, 0, abi.NetOffline, 0, 1, 0, abi.NetConnected, 4, 0, 1})
	f.Fuzz(func(t *testing.T, prog []byte) {
		n := newInet(t)
		n.ServiceUp([4]byte{10, 0, 2, 15}, 24)
		gw := [4]byte{10, 0, 2, 2}
		c, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
		n.Connect(c, &Addr{Raw: sin4(gw, 80)})
		l, _ := n.Socket(unix.AF_INET, unix.SOCK_STREAM, 0, true)
		n.BindInet(l, sin4([4]byte{}, 8080))
		n.Listen(l, 2)
		u, _ := n.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0, true)
		n.Send(u, &Iov{One: []byte("q"), Len: 1}, 0, 0, &Addr{Raw: sin4(gw, 53)})
		n.Send(c, &Iov{One: []byte("hello"), Len: 5}, 0, 0, nil)
		ids := []uint64{}
		for _, s := range []int{c, l, u} {
			ids = append(ids, uint64(n.socks[s].gen)<<32|uint64(s))
		}
		ids = append(ids, 0xdead<<32|uint64(u), uint64(NumSockets+5))
		evbuf := make([]byte, 4*int(unsafe.Sizeof(abi.NetEvent{})))
		data := make([]byte, 512)
		big := make([]byte, maxUDP6+10)
		for i := range data {
			data[i] = byte(i * 7)
		}
		for len(prog) >= 4 {
			op, who, ln, flag := uint32(prog[0]), prog[1], int(prog[2]), prog[3]
			prog = prog[4:]
			call := abi.NetCall{Op: op, Sock: ids[int(who)%len(ids)], Errno: int32(flag), Len: uintptr(ln),
				LPort: uint16(ln) << 4, RPort: uint16(flag) << 8}
			binary.BigEndian.PutUint32(call.Remote[12:], uint32(ln)<<24|uint32(flag))
			call.Remote[10], call.Remote[11] = 0xff, 0xff
			var buf []byte
			switch op {
			case abi.NetPoll:
				buf = evbuf[:min(ln, len(evbuf))]
			case abi.NetRx, abi.NetTx, abi.NetDgramIn, abi.NetDgramOut:
				buf = data[:min(ln*2, len(data))]
				if flag == 0xff {
					buf = big // a datagram as large as the wire's, and larger
				}
			}
			n.Service(&call, kbuf(buf))
			if op == abi.NetAccepted && call.Sock != ids[int(who)%len(ids)] {
				ids = append(ids, call.Sock)
			}
			// The program meanwhile: reads, writes, accepts, closes.
			switch flag % 8 {
			case 1:
				var m Msg
				n.Recv(c, &Iov{One: data[:64], Len: 64}, unix.MSG_DONTWAIT, &m)
			case 2:
				n.Send(c, &Iov{One: data[:ln], Len: ln}, 0, unix.MSG_DONTWAIT, nil)
			case 3:
				if a, _, e := n.Accept(l); e == 0 {
					n.Close(a)
				}
			case 4:
				n.Send(u, &Iov{One: data[:ln], Len: ln}, 0, unix.MSG_DONTWAIT, &Addr{Raw: sin4(gw, 53)})
			case 5:
				var m Msg
				n.Recv(u, &Iov{One: data[:64], Len: 64}, unix.MSG_DONTWAIT, &m)
			}
			for i := range n.socks {
				p := &n.socks[i]
				if z := p.ringSize(); p.n < 0 || p.n > z || p.txn < 0 || p.txn > z || p.r < 0 || p.r >= z || p.txr < 0 || p.txr >= z {
					t.Fatalf("socket %d: ring out of bounds: r %d n %d txr %d txn %d", i, p.r, p.n, p.txr, p.txn)
				}
			}
		}
	})
}
