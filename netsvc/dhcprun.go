package netsvc

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"time"
	"unsafe"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"yolk/kernel/abi"
	"yolk/kernel/etc"
)

// Running the DHCP client (dhcpclient.go) for a NIC booted without
// yolk.net, as clouds serve DHCP (docs/net.md, "DHCP"). At boot it runs
// on the NIC's raw frames before the netstack takes the NIC; then a
// goroutine of the service keeps it: the loop hands it every frame to
// UDP port 68 from port 67 (framesIn), and its frames go out through
// the NIC under the NIC's lock. What a lease gives goes to three
// places: the netstack (address, routes, the link's MTU, so the TCP MSS),
// the kernel (NetAddr4, NetMTU, NetRoutes4: what net.Interfaces and
// netlink's dumps report), and /etc/resolv.conf (kernel/etc's form).
// Each lease, renewal, NAK and expiry is a line on the console.

// dhcpBootLimit bounds the boot's discovery: without a lease by then the
// service does not start.
const dhcpBootLimit = 16 * time.Second

// Route protocols, as Linux's RTPROT_*.
const (
	rtprotKernel = 2
	rtprotBoot   = 3
	rtprotDHCP   = 16
	scopeLink    = 253 // RT_SCOPE_LINK
)

// DHCP gets a lease for the NIC whose MAC is mac on the NIC's raw
// frames (a test's call: the service lends the NIC with Exclusive),
// within dhcpBootLimit. The lease is not applied.
func DHCP(mac [6]byte) (Lease, error) {
	c, err := dhcpAcquire(sysCalls{}, mac, time.Now().UnixNano(), dhcpBootLimit)
	if err != nil {
		return Lease{}, err
	}
	return c.lease, nil
}

func dhcpLog(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "netsvc: DHCP: "+format+"\n", args...)
}

// dhcpAcquire runs a client on the NIC's raw frames until it holds a
// lease, for at most limit.
func dhcpAcquire(k kernelCalls, mac [6]byte, seed int64, limit time.Duration) (*dhcpClient, error) {
	c := newDHCPClient(mac, seed)
	end := time.Now().Add(limit)
	var sendErr error
	do := func(a dhcpAct) bool {
		if a.frame != nil {
			if e := k.NICSend(a.frame); e != 0 {
				sendErr = e
			}
		}
		if a.note != "" {
			dhcpLog("%s", a.note)
		}
		return a.bound
	}
	if do(c.begin(time.Now())) {
		return c, nil
	}
	buf := make([]byte, 128<<10) // a coalesced frame's record fits (abi.NICRecordMaxGSO)
	for {
		now := time.Now()
		if now.After(end) {
			if sendErr != nil {
				return nil, fmt.Errorf("DHCP: no lease in %v: sending: %v", limit, sendErr)
			}
			return nil, fmt.Errorf("DHCP: no lease in %v (%d DISCOVERs, state %v)", limit, c.discovers, c.st)
		}
		if !c.next.IsZero() && !now.Before(c.next) {
			if do(c.timer(now)) {
				return c, nil
			}
			continue
		}
		r, e := k.NICRecv(buf)
		if e != 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for b := buf[:r]; len(b) >= 4; {
			l := int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24) & abi.NICRecordLenMask
			if 4+l > len(b) {
				break
			}
			if f := b[4 : 4+l]; isDHCPReply(f) && do(c.input(time.Now(), f)) {
				return c, nil
			}
			b = b[min((4+l+abi.NICRecordAlign-1)&^(abi.NICRecordAlign-1), len(b)):]
		}
	}
}

// dhcpRun keeps the lease: renewals, rebinding, expiry, NAKs.
func (s *service) dhcpRun() {
	c := s.dhcp
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		if !c.next.IsZero() {
			t.Reset(time.Until(c.next))
		}
		var a dhcpAct
		select {
		case f := <-s.dhcpIn:
			a = c.input(time.Now(), f)
		case <-t.C:
			a = c.timer(time.Now())
		case <-s.quit:
			t.Stop()
			return
		}
		t.Stop()
		if a.frame != nil {
			s.nicMu.Lock()
			e := s.k.NICSend(a.frame)
			s.nicMu.Unlock()
			if e != 0 {
				dhcpLog("sending: %v", e)
			}
		}
		if a.note != "" {
			dhcpLog("%s", a.note)
		}
		if a.drop {
			s.dropLease()
		}
		if a.bound {
			if s.lease == nil || !sameLease(s.lease, &c.lease) {
				dhcpLog("%s", c.lease.describe())
			}
			s.setLease(&c.lease)
		}
	}
}

// dhcpFrameIn gives the client a frame to port 68 (the loop's call); it
// is dropped if the client is behind.
func (s *service) dhcpFrameIn(f []byte) {
	select {
	case s.dhcpIn <- f:
	default:
	}
}

func sameLease(a, b *Lease) bool {
	return a.Addr == b.Addr && a.Prefix == b.Prefix && a.Router == b.Router && a.MTU == b.MTU && a.Domain == b.Domain &&
		slices.Equal(a.DNS, b.DNS) && slices.Equal(a.Search, b.Search) && slices.Equal(a.Routes, b.Routes)
}

// setLease applies lease l: the address (if it changed), the routes, the
// MTU, resolv.conf.
func (s *service) setLease(l *Lease) {
	old := s.lease
	if old == nil || old.Addr != l.Addr || old.Prefix != l.Prefix {
		if old != nil {
			s.st.RemoveAddress(nicID, tcpip.AddrFrom4(old.Addr))
		}
		s.addAddr4(l.Addr, l.Prefix)
		s.call(&abi.NetCall{Op: abi.NetAddr4, Local: [16]byte(v4Mapped(l.Addr)), Len: uintptr(l.Prefix)})
	}
	s.setRoutes(leaseRoutes(l, rtprotDHCP))
	s.setMTU(l.MTU)
	writeResolvConf(s.resolv, l)
	lc := *l
	s.lease = &lc
}

// dropLease takes the lease's address and routes away (it expired, or a
// NAK ended it); connections from the address fail.
func (s *service) dropLease() {
	if s.lease == nil {
		return
	}
	s.st.RemoveAddress(nicID, tcpip.AddrFrom4(s.lease.Addr))
	s.call(&abi.NetCall{Op: abi.NetAddr4, Local: [16]byte(v4Mapped([4]byte{}))})
	s.setRoutes(nil)
	writeResolvConf(s.resolv, nil)
	s.lease = nil
}

func (s *service) addAddr4(a [4]byte, prefix int) error {
	if e := s.st.AddProtocolAddress(nicID, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(a), PrefixLen: prefix}}, stack.AddressProperties{}); e != nil {
		return fmt.Errorf("AddProtocolAddress: %v", e)
	}
	return nil
}

// setMTU makes mtu the link's (0: the device's): the netstack's segments
// and MSS follow it, and the kernel's netlink reports it.
func (s *service) setMTU(mtu int) {
	if mtu == 0 || mtu > int(s.devMTU) {
		mtu = int(s.devMTU)
	}
	if uint32(mtu) == s.link.MTU() && s.mtuSet {
		return
	}
	s.link.SetMTU(uint32(mtu)) // the IP MTU: the link adds its Ethernet header
	s.mtuSet = true
	s.call(&abi.NetCall{Op: abi.NetMTU, Len: uintptr(mtu)})
}

// leaseRoutes are the routes lease l makes, as networkd makes them:
// the subnet's (below /32), then option 121's, or, without it, a default
// route through option 3's router; a gateway not on the link (a /32
// address: GCE's) is reached through a host route to it on the link.
// At most abi.NetMaxRoutes.
func leaseRoutes(l *Lease, proto uint8) []abi.NetRoute {
	var rs []abi.NetRoute
	onLink := func(a [4]byte) bool {
		for _, r := range rs {
			if r.Gateway == ([4]byte{}) && inPrefix(a, r.Dst, int(r.Prefix)) {
				return true
			}
		}
		return false
	}
	add := func(r abi.NetRoute) {
		for _, q := range rs {
			if q.Dst == r.Dst && q.Prefix == r.Prefix {
				return // the first route to a destination wins
			}
		}
		if len(rs) < abi.NetMaxRoutes {
			rs = append(rs, r)
		}
	}
	if l.Prefix > 0 && l.Prefix < 32 {
		m := net4Mask(l.Prefix)
		var dst [4]byte
		for i := range dst {
			dst[i] = l.Addr[i] & m[i]
		}
		add(abi.NetRoute{Dst: dst, Prefix: uint8(l.Prefix), Src: l.Addr, Proto: rtprotKernel, Scope: scopeLink})
	}
	via := func(dst [4]byte, prefix int, gw [4]byte) {
		if gw == ([4]byte{}) {
			add(abi.NetRoute{Dst: dst, Prefix: uint8(prefix), Src: l.Addr, Proto: proto, Scope: scopeLink})
			return
		}
		if !onLink(gw) {
			add(abi.NetRoute{Dst: gw, Prefix: 32, Src: l.Addr, Proto: proto, Scope: scopeLink})
		}
		add(abi.NetRoute{Dst: dst, Prefix: uint8(prefix), Gateway: gw, Src: l.Addr, Proto: proto})
	}
	if l.Routes != nil {
		// On-link routes first, so that a gateway they cover needs no
		// host route of its own.
		for _, r := range l.Routes {
			if r.Gateway == ([4]byte{}) {
				via(r.Dst, r.Prefix, r.Gateway)
			}
		}
		for _, r := range l.Routes {
			if r.Gateway != ([4]byte{}) {
				via(r.Dst, r.Prefix, r.Gateway)
			}
		}
	} else if l.Router != ([4]byte{}) {
		via([4]byte{}, 0, l.Router)
	}
	// The kernel's dump goes as Linux's table: by destination, then
	// prefix.
	slices.SortStableFunc(rs, func(a, b abi.NetRoute) int {
		if c := slices.Compare(a.Dst[:], b.Dst[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Prefix, b.Prefix)
	})
	return rs
}

func inPrefix(a, dst [4]byte, prefix int) bool {
	m := net4Mask(prefix)
	for i := range a {
		if a[i]&m[i] != dst[i]&m[i] {
			return false
		}
	}
	return true
}

// setRoutes makes rs the netstack's route table (longest prefix first:
// it takes the first route that matches) and the kernel's.
func (s *service) setRoutes(rs []abi.NetRoute) {
	table := make([]tcpip.Route, 0, len(rs))
	for _, r := range rs {
		m := tcpip.MaskFromBytes(net4Mask(int(r.Prefix)))
		sub, err := tcpip.NewSubnet(tcpip.AddrFrom4(r.Dst), m)
		if err != nil {
			continue
		}
		tr := tcpip.Route{Destination: sub, NIC: nicID}
		if r.Gateway != ([4]byte{}) {
			tr.Gateway = tcpip.AddrFrom4(r.Gateway)
		}
		table = append(table, tr)
	}
	slices.SortStableFunc(table, func(a, b tcpip.Route) int { return cmp.Compare(b.Destination.Prefix(), a.Destination.Prefix()) })
	s.st.SetRouteTable(table)
	c := abi.NetCall{Op: abi.NetRoutes4}
	var buf []byte
	if len(rs) > 0 {
		buf = unsafe.Slice((*byte)(unsafe.Pointer(&rs[0])), len(rs)*int(unsafe.Sizeof(rs[0])))
	}
	if err := s.callBuf(&c, buf); err != nil {
		fmt.Fprintf(os.Stderr, "netsvc: NetRoutes4: %v\n", err)
	}
}

// writeResolvConf writes lease l's DNS servers and search list into
// path (/etc/resolv.conf in an image) in kernel/etc's form; nil: none
// (the lease is gone). An empty path: nowhere (a hosted test's service).
// It writes path.tmp and renames it over path, so that Go's resolver,
// which rereads the file when it changes, never reads it empty or half
// written during a renewal.
func writeResolvConf(path string, l *Lease) {
	if path == "" {
		return
	}
	var r etc.Resolv
	b := []byte("# DHCP (yolk netsvc)\n")
	if l != nil {
		for _, d := range l.DNS {
			if r.NNS < etc.MaxNS {
				r.NS[r.NNS] = d
				r.NNS++
			}
		}
		for _, d := range searchNames(l) {
			if r.NSearch+len(d)+1 > etc.MaxSearch {
				break
			}
			if r.NSearch > 0 {
				r.Search[r.NSearch] = ' '
				r.NSearch++
			}
			r.NSearch += copy(r.Search[r.NSearch:], d)
		}
	}
	var text [etc.MaxSize]byte
	b = append(b, text[:etc.ResolvConf(text[:], &r)]...)
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, b, 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		fmt.Fprintf(os.Stderr, "netsvc: %s: %v\n", path, err)
	}
}

// searchNames is the search list lease l gives: its domain, then option
// 119's names.
func searchNames(l *Lease) []string {
	var names []string
	if l.Domain != "" {
		names = append(names, l.Domain)
	}
	for _, d := range l.Search {
		if !slices.Contains(names, d) {
			names = append(names, d)
		}
	}
	return names
}
