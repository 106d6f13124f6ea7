package netsvc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"yolk/kernel/abi"
)

// A DHCP client (RFC 2131) for a NIC booted without yolk.net: DISCOVER,
// OFFER, REQUEST, ACK over raw frames through the NIC's calls, before the
// netstack takes the NIC (or inside Exclusive). Only what a guest on a
// LAN or QEMU's user network needs: one lease, no renewal (leases on
// those networks outlive the programs yolk runs; the lease time is
// reported).

// Lease is what a DHCP server gave.
type Lease struct {
	Addr, Mask, Router, DNS, Server [4]byte
	Prefix                          int
	Seconds                         uint32
}

const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpAck      = 5
	dhcpNak      = 6
	dhcpMagic    = 0x63825363
)

// DHCP gets a lease for the NIC whose MAC is mac: up to four rounds of
// DISCOVER and REQUEST, each waiting two seconds for its answer.
func DHCP(mac [6]byte) (Lease, error) { return dhcp(sysCalls{}, mac) }

func dhcp(k kernelCalls, mac [6]byte) (Lease, error) {
	xid := uint32(time.Now().UnixNano())
	var l Lease
	var err error
	for try := 0; try < 4; try++ {
		var offer []byte
		if offer, err = dhcpExchange(k, mac, xid, dhcpMessage(mac, xid, dhcpDiscover, nil), dhcpOffer); err != nil {
			continue
		}
		l = parseLease(offer)
		req := dhcpMessage(mac, xid, dhcpRequest, func(o []byte) []byte {
			o = append(o, 50, 4)
			o = append(o, l.Addr[:]...)
			o = append(o, 54, 4)
			return append(o, l.Server[:]...)
		})
		var ack []byte
		if ack, err = dhcpExchange(k, mac, xid, req, dhcpAck); err != nil {
			continue
		}
		l = parseLease(ack)
		if l.Prefix == 0 {
			l.Prefix = 24 // no subnet mask given: a /24, as clients assume
		}
		return l, nil
	}
	return l, fmt.Errorf("DHCP: %w", err)
}

// dhcpMessage is a DHCP message from mac in an Ethernet broadcast: UDP
// 0.0.0.0:68 to 255.255.255.255:67, checksums in software.
func dhcpMessage(mac [6]byte, xid uint32, typ byte, opts func([]byte) []byte) []byte {
	b := make([]byte, 240, 320)
	b[0], b[1], b[2] = 1, 1, 6 // BOOTREQUEST, Ethernet, 6-byte addresses
	binary.BigEndian.PutUint32(b[4:], xid)
	binary.BigEndian.PutUint16(b[10:], 0x8000) // broadcast the answer: we have no address
	copy(b[28:], mac[:])
	binary.BigEndian.PutUint32(b[236:], dhcpMagic)
	b = append(b, 53, 1, typ)
	b = append(b, 61, 7, 1)
	b = append(b, mac[:]...)
	b = append(b, 55, 4, 1, 3, 6, 51) // mask, router, DNS, lease
	if opts != nil {
		b = opts(b)
	}
	b = append(b, 255)
	for len(b) < 300 {
		b = append(b, 0)
	}
	udp := make([]byte, 8, 8+len(b))
	binary.BigEndian.PutUint16(udp[0:], 68)
	binary.BigEndian.PutUint16(udp[2:], 67)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(b)))
	udp = append(udp, b...)
	bcast := [4]byte{255, 255, 255, 255}
	c := ^sum16(sum16(sum16(sum16(0, []byte{0, 0, 0, 0}), bcast[:]), []byte{0, 17, byte(len(udp) >> 8), byte(len(udp))}), udp)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], c)
	ip := make([]byte, 20, 20+len(udp))
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
	copy(ip[16:], bcast[:])
	binary.BigEndian.PutUint16(ip[10:], ^sum16(0, ip))
	f := make([]byte, 0, 14+len(ip)+len(udp))
	f = append(f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	f = append(f, mac[:]...)
	f = append(f, 0x08, 0x00)
	f = append(f, ip...)
	return append(f, udp...)
}

// sum16 adds b to the Internet checksum's folded ones' complement sum.
func sum16(s uint16, b []byte) uint16 {
	x := uint32(s)
	for i := 0; i+1 < len(b); i += 2 {
		x += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		x += uint32(b[len(b)-1]) << 8
	}
	for x > 0xffff {
		x = x&0xffff + x>>16
	}
	return uint16(x)
}

// dhcpExchange sends frame and waits up to two seconds for a DHCP answer
// of type want to xid; it returns the answer's BOOTP message.
func dhcpExchange(k kernelCalls, mac [6]byte, xid uint32, frame []byte, want byte) ([]byte, error) {
	if e := k.NICSend(frame); e != 0 {
		return nil, fmt.Errorf("sending: %v", e)
	}
	buf := make([]byte, 16<<10)
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		r, e := k.NICRecv(buf)
		if e != 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for b := buf[:r]; len(b) >= 4; {
			l := int(binary.LittleEndian.Uint32(b))
			if 4+l > len(b) {
				break
			}
			if m := dhcpAnswer(b[4:4+l], mac, xid); m != nil {
				if t := dhcpType(m); t == want {
					return m, nil
				} else if t == dhcpNak {
					return nil, errors.New("the server said NAK")
				}
			}
			b = b[min((4+l+abi.NICRecordAlign-1)&^(abi.NICRecordAlign-1), len(b)):]
		}
	}
	return nil, errors.New("no answer")
}

// dhcpAnswer is the BOOTP reply to mac and xid that frame f carries, nil
// if it carries none (or a malformed one).
func dhcpAnswer(f []byte, mac [6]byte, xid uint32) []byte {
	if len(f) < 14+20+8+240 || f[12] != 0x08 || f[13] != 0 {
		return nil
	}
	ip := f[14:]
	ihl := int(ip[0]&15) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ip[9] != 17 || len(ip) < ihl+8 || sum16(0, ip[:ihl]) != 0xffff {
		return nil
	}
	udp := ip[ihl:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if binary.BigEndian.Uint16(udp[0:]) != 67 || binary.BigEndian.Uint16(udp[2:]) != 68 || ulen < 8+240 || ulen > len(udp) {
		return nil
	}
	b := udp[8:ulen]
	if b[0] != 2 || binary.BigEndian.Uint32(b[4:]) != xid || !bytes.Equal(b[28:34], mac[:]) || binary.BigEndian.Uint32(b[236:]) != dhcpMagic {
		return nil
	}
	return b
}

// dhcpOption is option code of BOOTP message m, nil if absent.
func dhcpOption(m []byte, code byte) []byte {
	for o := m[240:]; len(o) > 0 && o[0] != 255; {
		if o[0] == 0 {
			o = o[1:]
			continue
		}
		if len(o) < 2 || len(o) < 2+int(o[1]) {
			return nil
		}
		if o[0] == code {
			return o[2 : 2+int(o[1])]
		}
		o = o[2+int(o[1]):]
	}
	return nil
}

func dhcpType(m []byte) byte {
	if v := dhcpOption(m, 53); len(v) == 1 {
		return v[0]
	}
	return 0
}

func parseLease(m []byte) Lease {
	var l Lease
	copy(l.Addr[:], m[16:20])
	if v := dhcpOption(m, 1); len(v) == 4 {
		copy(l.Mask[:], v)
		for _, x := range v {
			for ; x&0x80 != 0; x <<= 1 {
				l.Prefix++
			}
		}
	}
	if v := dhcpOption(m, 3); len(v) >= 4 {
		copy(l.Router[:], v)
	}
	if v := dhcpOption(m, 6); len(v) >= 4 {
		copy(l.DNS[:], v)
	}
	if v := dhcpOption(m, 54); len(v) == 4 {
		copy(l.Server[:], v)
	}
	if v := dhcpOption(m, 51); len(v) == 4 {
		l.Seconds = binary.BigEndian.Uint32(v)
	}
	return l
}
