package main

import (
	"bytes"
	"encoding/binary"
	"errors"

	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/netsvc"
)

// TestNIC talks to QEMU's user network (slirp) at frame level through the
// NIC's private calls, the way the network service will: an ARP request
// for the gateway 10.0.2.2 and a DHCPDISCOVER broadcast, each answered by
// slirp (an ARP reply; a DHCPOFFER of 10.0.2.15). Frames arrive by the
// NIC's interrupt; the test waits for them on the eventfd the kernel
// signals, through Go's netpoller. It sends to nobody but slirp's gateway
// and DHCP server (never 10.0.2.3, whose DNS reaches the host's
// resolver). Without a NIC it skips, saying so; the host harness gives
// the machines it boots one.

var (
	slirpGateway = [4]byte{10, 0, 2, 2}
	slirpGuest   = [4]byte{10, 0, 2, 15}
	broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

func nicInfo(t *T) abi.NICInfo {
	var in abi.NICInfo
	if _, _, e := syscall.Syscall(abi.SysNICInfo, uintptr(unsafe.Pointer(&in)), 0, 0); e != 0 {
		t.Fatalf("SysNICInfo: %v", e)
	}
	return in
}

func nicSend(frame []byte) error {
	if _, _, e := syscall.Syscall(abi.SysNICSend, uintptr(unsafe.Pointer(&frame[0])), uintptr(len(frame)), 0); e != 0 {
		return e
	}
	return nil
}

// nicRecords makes SysNICSendRecords's records of frames.
func nicRecords(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
		for len(b)%abi.NICRecordAlign != 0 {
			b = append(b, 0)
		}
	}
	return b
}

// nicSendRecords sends frames in one SysNICSendRecords: the bytes of
// the records sent.
func nicSendRecords(recs []byte) (int, error) {
	n, _, e := syscall.Syscall(abi.SysNICSendRecords, uintptr(unsafe.Pointer(&recs[0])), uintptr(len(recs)), 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// nicRecv returns the frames waiting in the kernel's ring (none: nil).
func nicRecv(t *T) [][]byte {
	buf := make([]byte, 128<<10) // a coalesced frame's record fits (abi.NICRecordMaxGSO)
	n, _, e := syscall.Syscall(abi.SysNICRecv, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0)
	if e == syscall.EAGAIN {
		return nil
	}
	if e != 0 {
		t.Fatalf("SysNICRecv: %v", e)
	}
	var frames [][]byte
	for off := 0; off < int(n); {
		if int(n)-off < 4 {
			t.Fatalf("SysNICRecv: a record header cut at %d of %d bytes", off, n)
		}
		w := binary.LittleEndian.Uint32(buf[off:])
		l := int(w & abi.NICRecordLenMask)
		if w&^(abi.NICRecordLenMask|abi.NICRecordCsumOK) != 0 || l < 14 || l > abi.NICMaxGSOFrame || off+4+l > int(n) {
			t.Fatalf("SysNICRecv: record at %d of %d bytes says %d bytes", off, n, l)
		}
		frames = append(frames, buf[off+4:off+4+l])
		off += (4 + l + abi.NICRecordAlign - 1) &^ (abi.NICRecordAlign - 1)
	}
	return frames
}

func testNIC(t *T) {
	in := nicInfo(t)
	if in.Present == 0 {
		t.Skipf("no network device (boot with yolk run -net user; the Raspberry Pi 3 has none)")
	}
	mac := in.MAC
	t.Logf("MAC %x, link up %d, PCI %d, address %v/%d gateway %v dns %v", mac, in.LinkUp, in.PCI, in.Addr, in.Prefix, in.Gateway, in.DNS)
	if mac == [6]byte{} || mac[0]&1 != 0 {
		t.Errorf("MAC %x: want a unicast address", mac)
	}
	if in.MTU != 1500 || in.LinkUp != 1 {
		t.Errorf("MTU %d, link up %d: want 1500, 1", in.MTU, in.LinkUp)
	}
	// The harnesses give no DNS server (slirp's forwards to the host's
	// resolver); yolk run gives 10.0.2.3.
	if in.Prefix != 24 || in.Addr != slirpGuest || in.Gateway != slirpGateway || in.DNS != [4]byte{10, 0, 2, 3} && in.DNS != [4]byte{} {
		t.Errorf("address %v/%d gateway %v dns %v: want yolk.net's 10.0.2.15/24, 10.0.2.2[, 10.0.2.3]", in.Addr, in.Prefix, in.Gateway, in.DNS)
	}

	// The kernel's checks of the calls' arguments.
	if e := nicSend(make([]byte, 13)); e != syscall.EINVAL {
		t.Errorf("sending 13 bytes: %v, want EINVAL", e)
	}
	if e := nicSend(make([]byte, abi.NICMaxFrame+1)); e != syscall.EINVAL {
		t.Errorf("sending %d bytes: %v, want EINVAL", abi.NICMaxFrame+1, e)
	}
	for _, bad := range []struct {
		what string
		recs []byte
	}{
		{"a 13-byte frame", nicRecords(make([]byte, 13))},
		{"a 1519-byte frame", nicRecords(make([]byte, abi.NICMaxFrame+1))},
		{"a record cut short", nicRecords(make([]byte, 60))[:60]},
		{"half a length", []byte{60, 0}},
	} {
		if _, e := nicSendRecords(bad.recs); e != syscall.EINVAL {
			t.Errorf("SysNICSendRecords of %s: %v, want EINVAL", bad.what, e)
		}
	}
	if _, _, e := syscall.Syscall(abi.SysNICSendRecords, 8, 64, 0); e != syscall.EFAULT {
		t.Errorf("SysNICSendRecords at address 8: %v, want EFAULT", e)
	}
	small := make([]byte, abi.NICRecordMax-1)
	if _, _, e := syscall.Syscall(abi.SysNICRecv, uintptr(unsafe.Pointer(&small[0])), uintptr(len(small)), 0); e != syscall.EINVAL {
		t.Errorf("receiving into %d bytes: %v, want EINVAL", len(small), e)
	}
	if _, _, e := syscall.Syscall(abi.SysNICNotify, 1, 0, 0); e != syscall.EBADF {
		t.Errorf("notify on the console: %v, want EBADF", e)
	}

	// The frames are this test's alone meanwhile: the TCP/IP service,
	// linked into this image, leaves the NIC be.
	netsvc.Exclusive(func() { nicFrames(t, mac) })
}

// nicFrames is TestNIC's exchange of frames with slirp.
func nicFrames(t *T, mac [6]byte) {
	// The eventfd the kernel signals, waited on through the netpoller.
	efd, _, e := syscall.Syscall(unix.SYS_EVENTFD2, 0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC, 0)
	if e != 0 {
		t.Fatalf("eventfd2: %v", e)
	}
	ev := os.NewFile(efd, "nic-eventfd")
	defer ev.Close()
	if _, _, e := syscall.Syscall(abi.SysNICNotify, efd, 0, 0); e != 0 {
		t.Fatalf("SysNICNotify: %v", e)
	}
	defer syscall.Syscall(abi.SysNICNotify, ^uintptr(0), 0, 0)
	for nicRecv(t) != nil { // whatever came before (nothing should have)
	}
	before := nicInfo(t)

	// wait sends req (again every second) until match accepts a
	// received frame, for at most 10 s. Frames are looked for only
	// after the eventfd said some arrived: an answer that came without
	// the interrupt signalling it fails the test.
	wait := func(what string, req []byte, match func(f []byte) bool) {
		end := time.Now().Add(10 * time.Second)
		for time.Now().Before(end) {
			// Twice, in one batch (the service's way), then once.
			recs := nicRecords(req, req)
			if n, err := nicSendRecords(recs); err != nil || n != len(recs) {
				t.Fatalf("sending the %s twice in one SysNICSendRecords: %d of %d bytes, %v", what, n, len(recs), err)
			}
			if err := nicSend(req); err != nil {
				t.Fatalf("sending the %s: %v", what, err)
			}
			next := time.Now().Add(time.Second)
			for time.Now().Before(next) {
				if err := ev.SetReadDeadline(next); err != nil {
					t.Fatalf("SetReadDeadline on the eventfd: %v (not in the netpoller)", err)
				}
				var cnt [8]byte
				n, err := ev.Read(cnt[:])
				if errors.Is(err, os.ErrDeadlineExceeded) {
					continue
				}
				if err != nil || n != 8 || binary.NativeEndian.Uint64(cnt[:]) == 0 {
					t.Fatalf("reading the eventfd: %d bytes %x, %v", n, cnt, err)
				}
				for _, f := range nicRecv(t) {
					if match(f) {
						return
					}
				}
			}
		}
		if f := nicRecv(t); f != nil {
			t.Fatalf("no answer to the %s signalled in 10 s; %d frames wait unsignalled", what, len(f))
		}
		t.Fatalf("no answer to the %s in 10 s", what)
	}

	var gwMAC [6]byte
	wait("ARP request for 10.0.2.2", arpRequest(mac, slirpGuest, slirpGateway), func(f []byte) bool {
		m, ok := arpReply(f, mac, slirpGuest, slirpGateway)
		gwMAC = m
		return ok
	})
	t.Logf("10.0.2.2 is at %x", gwMAC)

	xid := uint32(time.Now().UnixNano())
	var offer dhcpOffer
	wait("DHCPDISCOVER", dhcpDiscover(mac, xid), func(f []byte) bool {
		var ok bool
		offer, ok = parseDHCPOffer(t, f, mac, xid)
		return ok
	})
	if offer.yiaddr != slirpGuest || offer.server != slirpGateway {
		t.Errorf("DHCPOFFER of %v from server %v: want 10.0.2.15 from 10.0.2.2", offer.yiaddr, offer.server)
	}
	t.Logf("DHCPOFFER: %v from %v, router %v, dns %v, lease %ds", offer.yiaddr, offer.server, offer.router, offer.dns, offer.lease)

	after := nicInfo(t)
	if after.TxFrames < before.TxFrames+6 || after.RxFrames < before.RxFrames+2 || after.Interrupts <= before.Interrupts {
		t.Errorf("counters from %d sent, %d received, %d interrupts to %d, %d, %d: want 6 more sent, 2 more received, by interrupt",
			before.TxFrames, before.RxFrames, before.Interrupts, after.TxFrames, after.RxFrames, after.Interrupts)
	}
	if after.Dropped != 0 {
		t.Errorf("%d frames dropped", after.Dropped)
	}
}

// arpRequest is an Ethernet broadcast asking who has target, from
// mac/ip.
func arpRequest(mac [6]byte, ip, target [4]byte) []byte {
	f := make([]byte, 0, 60)
	f = append(f, broadcastMAC[:]...)
	f = append(f, mac[:]...)
	f = append(f, 0x08, 0x06)       // ARP
	f = append(f, 0, 1, 8, 0, 6, 4) // Ethernet, IPv4, lengths
	f = append(f, 0, 1)             // request
	f = append(f, mac[:]...)
	f = append(f, ip[:]...)
	f = append(f, 0, 0, 0, 0, 0, 0)
	f = append(f, target[:]...)
	return append(f, make([]byte, 60-len(f))...) // Ethernet's minimum (the FCS is the device's)
}

// arpReply checks f is target's ARP reply to mac/ip and returns target's
// MAC.
func arpReply(f []byte, mac [6]byte, ip, target [4]byte) ([6]byte, bool) {
	var m [6]byte
	if len(f) < 42 || !bytes.Equal(f[0:6], mac[:]) || f[12] != 0x08 || f[13] != 0x06 {
		return m, false
	}
	a := f[14:]
	if !bytes.Equal(a[0:6], []byte{0, 1, 8, 0, 6, 4}) || a[6] != 0 || a[7] != 2 || // a reply
		!bytes.Equal(a[14:18], target[:]) || !bytes.Equal(a[18:24], mac[:]) || !bytes.Equal(a[24:28], ip[:]) ||
		!bytes.Equal(a[8:14], f[6:12]) { // the sender's hardware address is the frame's source
		return m, false
	}
	copy(m[:], a[8:14])
	return m, m != [6]byte{} && m[0]&1 == 0
}

// csum is the Internet checksum's ones' complement sum of b (folded, not
// complemented), starting from sum.
func csum(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return sum
}

// udpChecksum is the UDP checksum of seg (its checksum field as it is)
// from src to dst.
func udpChecksum(src, dst [4]byte, seg []byte) uint16 {
	s := csum(0, src[:])
	s = csum(s, dst[:])
	s = csum(s, []byte{0, 17, byte(len(seg) >> 8), byte(len(seg))})
	return ^uint16(csum(s, seg))
}

// dhcpDiscover is a DHCPDISCOVER from mac: UDP 0.0.0.0:68 to
// 255.255.255.255:67 in an Ethernet broadcast, IPv4 and UDP checksums in
// software.
func dhcpDiscover(mac [6]byte, xid uint32) []byte {
	bootp := make([]byte, 240, 300)
	bootp[0], bootp[1], bootp[2] = 1, 1, 6 // BOOTREQUEST, Ethernet, 6-byte addresses
	binary.BigEndian.PutUint32(bootp[4:], xid)
	binary.BigEndian.PutUint16(bootp[10:], 0x8000) // broadcast the answer
	copy(bootp[28:], mac[:])
	binary.BigEndian.PutUint32(bootp[236:], 0x63825363) // magic cookie
	bootp = append(bootp, 53, 1, 1)                     // DHCPDISCOVER
	bootp = append(bootp, 61, 7, 1)                     // client identifier: Ethernet, MAC
	bootp = append(bootp, mac[:]...)
	bootp = append(bootp, 55, 3, 1, 3, 6) // parameters: mask, router, DNS
	bootp = append(bootp, 255)
	bootp = append(bootp, make([]byte, 300-len(bootp))...)

	udp := make([]byte, 8, 8+len(bootp))
	binary.BigEndian.PutUint16(udp[0:], 68)
	binary.BigEndian.PutUint16(udp[2:], 67)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(bootp)))
	udp = append(udp, bootp...)
	src, dst := [4]byte{}, [4]byte{255, 255, 255, 255}
	c := udpChecksum(src, dst, udp)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], c)

	ip := make([]byte, 20, 20+len(udp))
	ip[0], ip[8], ip[9] = 0x45, 64, 17 // IPv4, header 20 bytes; TTL; UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^uint16(csum(0, ip)))
	ip = append(ip, udp...)

	f := make([]byte, 0, 14+len(ip))
	f = append(f, broadcastMAC[:]...)
	f = append(f, mac[:]...)
	f = append(f, 0x08, 0x00)
	return append(f, ip...)
}

type dhcpOffer struct {
	yiaddr, server, router, dns [4]byte
	lease                       uint32
}

// parseDHCPOffer checks f is a DHCPOFFER for mac and xid (to mac or the
// broadcast address; IPv4 and UDP checksums verified) and decodes it. A
// frame that is no DHCP answer to us is false; one that is but is malformed
// fails the test.
func parseDHCPOffer(t *T, f []byte, mac [6]byte, xid uint32) (dhcpOffer, bool) {
	var o dhcpOffer
	if len(f) < 14+20+8+240 || (!bytes.Equal(f[0:6], mac[:]) && !bytes.Equal(f[0:6], broadcastMAC[:])) || f[12] != 0x08 || f[13] != 0 {
		return o, false
	}
	ip := f[14:]
	ihl := int(ip[0]&15) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ip[9] != 17 || len(ip) < ihl+8 {
		return o, false
	}
	udp := ip[ihl:]
	if binary.BigEndian.Uint16(udp[0:]) != 67 || binary.BigEndian.Uint16(udp[2:]) != 68 {
		return o, false
	}
	fail := func(format string, args ...any) (dhcpOffer, bool) {
		t.Errorf("DHCP answer: "+format, args...)
		return o, false
	}
	if c := csum(0, ip[:ihl]); c != 0xffff {
		return fail("IPv4 header checksum does not verify (sum %#x)", c)
	}
	total := int(binary.BigEndian.Uint16(ip[2:]))
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if total > len(ip) || ulen < 8 || ihl+ulen > total {
		return fail("lengths: IPv4 %d, UDP %d, frame's %d", total, ulen, len(ip))
	}
	udp = udp[:ulen]
	var src, dst [4]byte
	copy(src[:], ip[12:16])
	copy(dst[:], ip[16:20])
	if binary.BigEndian.Uint16(udp[6:]) != 0 && udpChecksum(src, dst, udp) != 0 {
		return fail("UDP checksum does not verify")
	}
	b := udp[8:]
	if len(b) < 240 || b[0] != 2 || binary.BigEndian.Uint32(b[4:]) != xid || !bytes.Equal(b[28:34], mac[:]) ||
		binary.BigEndian.Uint32(b[236:]) != 0x63825363 {
		return o, false // a BOOTREPLY for somebody else
	}
	copy(o.yiaddr[:], b[16:20])
	msgType := 0
	for opts := b[240:]; len(opts) > 0 && opts[0] != 255; {
		if opts[0] == 0 {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || len(opts) < 2+int(opts[1]) {
			return fail("options cut short")
		}
		code, v := opts[0], opts[2:2+int(opts[1])]
		switch {
		case code == 53 && len(v) == 1:
			msgType = int(v[0])
		case code == 54 && len(v) == 4:
			copy(o.server[:], v)
		case code == 3 && len(v) >= 4:
			copy(o.router[:], v)
		case code == 6 && len(v) >= 4:
			copy(o.dns[:], v)
		case code == 51 && len(v) == 4:
			o.lease = binary.BigEndian.Uint32(v)
		}
		opts = opts[2+len(v):]
	}
	if msgType != 2 {
		return fail("message type %d, want DHCPOFFER (2)", msgType)
	}
	if src != o.server {
		return fail("from %v, server identifier %v", src, o.server)
	}
	return o, true
}
