package netsvc

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"yolk/kernel/abi"
)

// IPv6 on the NIC by stateless autoconfiguration (RFC 4862): the netstack
// solicits routers, takes the prefix a router advertises (slirp's
// fec0::/64, or a LAN's) and makes its address; this dispatcher hears of
// it. The netstack's callbacks may not call into the stack, so they only
// record what happened; the service loop adds and removes the routes and
// tells the kernel the address (abi.NetAddr6), which then reaches IPv6
// addresses through the service and lists it in netlink's table, and
// that it went when its lifetime ends (abi.NetDelAddr6).
//
// Anyone on the link can advertise: a router or prefix that comes, goes
// and comes again, or changes its preference, is one route, not one more
// each time (the netstack reports each of those as new), and an address
// is told to the kernel once while it lasts.

// ndp is the netstack's NDP dispatcher and the events it recorded.
type ndp struct {
	s      *service
	mu     sync.Mutex
	routes []routeChange          // in the order the netstack reported them
	addrs  []addrChange           // likewise
	told   map[tcpip.Address]bool // the addresses the kernel was told of (the loop's)
}

// addrChange is an address assigned (add) or invalidated.
type addrChange struct {
	a   tcpip.AddressWithPrefix
	add bool
}

// routeChange is a route discovered or updated (add), or invalidated.
type routeChange struct {
	r   tcpip.Route
	add bool
}

func ipv6Options(d *ndp) ipv6.Options {
	return ipv6.Options{
		AutoGenLinkLocal: true,
		NDPDisp:          d,
		NDPConfigs: ipv6.NDPConfigurations{
			MaxRtrSolicitations:     3,
			RtrSolicitationInterval: time.Second,
			MaxRtrSolicitationDelay: 100 * time.Millisecond,
			HandleRAs:               ipv6.HandlingRAsEnabledWhenForwardingDisabled,
			DiscoverDefaultRouters:  true,
			DiscoverOnLinkPrefixes:  true,
			AutoGenGlobalAddresses:  true,
		},
	}
}

func (d *ndp) record(f func()) {
	d.mu.Lock()
	f()
	d.mu.Unlock()
	if d.s != nil {
		d.s.wake()
	}
}

func (d *ndp) OnDuplicateAddressDetectionResult(tcpip.NICID, tcpip.Address, stack.DADResult) {}

func (d *ndp) route(r tcpip.Route, add bool) {
	d.record(func() { d.routes = append(d.routes, routeChange{r, add}) })
}

func (d *ndp) OnOffLinkRouteUpdated(nic tcpip.NICID, dest tcpip.Subnet, router tcpip.Address, _ header.NDPRoutePreference) {
	d.route(tcpip.Route{Destination: dest, Gateway: router, NIC: nic}, true)
}

func (d *ndp) OnOffLinkRouteInvalidated(nic tcpip.NICID, dest tcpip.Subnet, router tcpip.Address) {
	d.route(tcpip.Route{Destination: dest, Gateway: router, NIC: nic}, false)
}

func (d *ndp) OnOnLinkPrefixDiscovered(nic tcpip.NICID, prefix tcpip.Subnet) {
	d.route(tcpip.Route{Destination: prefix, NIC: nic}, true)
}

func (d *ndp) OnOnLinkPrefixInvalidated(nic tcpip.NICID, prefix tcpip.Subnet) {
	d.route(tcpip.Route{Destination: prefix, NIC: nic}, false)
}

// OnAutoGenAddress: the address counts once duplicate address detection
// has assigned it (addrWatch).
func (d *ndp) OnAutoGenAddress(_ tcpip.NICID, a tcpip.AddressWithPrefix) stack.AddressDispatcher {
	return &addrWatch{d: d, a: a}
}

func (d *ndp) OnAutoGenAddressDeprecated(tcpip.NICID, tcpip.AddressWithPrefix) {}

// OnAutoGenAddressInvalidated: the address's lifetime ended or its prefix
// went; the kernel stops using it.
func (d *ndp) OnAutoGenAddressInvalidated(_ tcpip.NICID, a tcpip.AddressWithPrefix) {
	d.record(func() { d.addrs = append(d.addrs, addrChange{a, false}) })
}

func (d *ndp) OnRecursiveDNSServerOption(tcpip.NICID, []tcpip.Address, time.Duration) {}
func (d *ndp) OnDNSSearchListOption(tcpip.NICID, []string, time.Duration)             {}
func (d *ndp) OnDHCPv6Configuration(tcpip.NICID, ipv6.DHCPv6ConfigurationFromNDPRA)   {}

type addrWatch struct {
	d    *ndp
	a    tcpip.AddressWithPrefix
	once sync.Once
}

func (w *addrWatch) OnChanged(_ stack.AddressLifetimes, st stack.AddressAssignmentState) {
	if st == stack.AddressAssigned {
		w.once.Do(func() { w.d.record(func() { w.d.addrs = append(w.d.addrs, addrChange{w.a, true}) }) })
	}
}

func (w *addrWatch) OnRemoved(stack.AddressRemovalReason) {}

// apply, in the service loop, adds and removes the routes and tells the
// kernel the global addresses that came.
func (d *ndp) apply(st *stack.Stack) {
	d.mu.Lock()
	routes, addrs := d.routes, d.addrs
	d.routes, d.addrs = nil, nil
	d.mu.Unlock()
	for _, c := range routes {
		st.RemoveRoutes(func(r tcpip.Route) bool { return r.Equal(c.r) })
		if c.add {
			st.AddRoute(c.r)
		}
	}
	for _, ch := range addrs {
		a := ch.a
		if a.Address.Len() != 16 || header.IsV6LinkLocalUnicastAddress(a.Address) || d.told[a.Address] == ch.add {
			continue // link-local: the netstack's own business; or told already
		}
		if d.told == nil {
			d.told = map[tcpip.Address]bool{}
		}
		op := uint32(abi.NetAddr6)
		if ch.add {
			d.told[a.Address] = true
		} else {
			delete(d.told, a.Address)
			op = abi.NetDelAddr6
		}
		c := abi.NetCall{Op: op, Local: a.Address.As16(), Len: uintptr(a.PrefixLen)}
		d.s.call(&c)
	}
}
