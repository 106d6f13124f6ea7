package abi

// The network service's private call (docs/net.md, "The service"): the
// channel between the kernel's socket layer and the TCP/IP service
// (package netsvc, gVisor's netstack in ordinary goroutines). The kernel
// owns the sockets, their rings and the port table; the service moves
// data between those rings and netstack endpoints and reports what
// happened on the wire. A production call, answered in every image: ENODEV
// for every operation but NetUp until a service has said NetUp.
//
// One number, SysNet, with a0 pointing at a NetCall whose Op says what is
// asked. Sockets are named by their identity (Sock: generation<<32 |
// slot), which never names another socket: a call for a socket that is
// gone is EBADF.
const SysNet = 0x1020

// NetCall is SysNet's argument, in and out.
type NetCall struct {
	Op     uint32
	Errno  int32  // NetConnected, NetReset: the error (0: connected)
	Sock   uint64 // the socket (NetAccepted: the listener; out: the new socket)
	LPort  uint16 // local and remote ports, host order
	RPort  uint16
	Family uint16 // AF_INET or AF_INET6: the addresses' kind
	_      uint16
	Local  [16]byte // IPv4 v4-mapped (::ffff:a.b.c.d)
	Remote [16]byte
	Buf    uintptr // NetPoll: []NetEvent; NetRx, NetTx, NetDgramIn, NetDgramOut: bytes
	Len    uintptr
	N      uintptr // out: events, or bytes moved
	Left   uintptr // NetTx, NetDgramOut, out: the bytes Sock still has to send after these (0: nothing)
}

// NetCall.Op.
const (
	NetUp        = 1 + iota // the service is ready: Local (v4-mapped) is the NIC's address, Len its prefix, Buf an eventfd the kernel adds 1 to when it has work
	NetPoll                 // the sockets with work: up to Len bytes of NetEvent at Buf; N events
	NetConnected            // Sock's connect finished: Errno 0, or its error
	NetAccepted             // a connection came for listener Sock (Local, LPort, Remote, RPort): out Sock is its socket; EAGAIN if the queue is full (NetOpAcceptRoom comes)
	NetRx                   // Len bytes at Buf arrived for stream Sock: N taken (fewer if its ring is full: NetOpRxRoom comes); ENOBUFS if the ring is empty and no page is to be had (try again later: no NetOpRxRoom comes)
	NetTx                   // take up to Len bytes Sock has to send into Buf: N given, Left still waiting
	NetFin                  // Sock's peer shut its sending side (end of file after what came)
	NetReset                // Sock's connection is gone: Errno (ECONNRESET, ETIMEDOUT...)
	NetDgramIn              // a datagram for UDP Sock from Remote, RPort: Len bytes at Buf
	NetDgramOut             // the next datagram UDP Sock sends: into Buf (Len bytes), to Remote, RPort; N its length, Left nonzero if more wait; EAGAIN if none
	NetRelease              // the service is done with closed socket Sock: its slot may go
	NetOffline              // Len 1: other addresses are unreachable (ENETUNREACH) until Len 0 (a test that must send nothing out)
	NetAddr6                // the NIC has IPv6 address Local, prefix Len (autoconfigured): IPv6 addresses are reachable through the service
	NetDelAddr6             // the NIC's IPv6 address Local is gone (its lifetime ended, its prefix withdrawn)
	NetAddr4                // the NIC's IPv4 address is now Local (v4-mapped), prefix Len; 0.0.0.0: it has none (a DHCP lease ended)
	NetMTU                  // the NIC's MTU is Len (DHCP's option 26): netlink's RTM_NEWLINK says so
	NetRoutes4              // the IPv4 routes are the Len bytes of NetRoute at Buf (at most NetMaxRoutes): netlink's route dump says them
)

// NetRoute is an IPv4 route of the main table, as the service made it
// (NetRoutes4) and netlink's RTM_NEWROUTE describes it.
type NetRoute struct {
	Dst     [4]byte
	Gateway [4]byte // zero: on the link
	Src     [4]byte // the preferred source (RTA_PREFSRC); zero: none
	Prefix  uint8
	Proto   uint8 // RTPROT_KERNEL (the address's subnet), RTPROT_BOOT (yolk.net), RTPROT_DHCP
	Scope   uint8 // RT_SCOPE_UNIVERSE, or RT_SCOPE_LINK for a route on the link
	_       uint8
}

// NetMaxRoutes is how many routes NetRoutes4 takes.
const NetMaxRoutes = 16

// NetEvent is a socket's pending work, as NetPoll reports it.
type NetEvent struct {
	Sock    uint64
	Ops     uint32 // NetOp* bits
	Backlog int32  // a listener's
	Typ     uint8  // SOCK_STREAM or SOCK_DGRAM
	Family  uint8  // AF_INET or AF_INET6
	V6Only  uint8
	_       uint8
	LPort   uint16
	RPort   uint16
	Local   [16]byte
	Remote  [16]byte
}

// NetEvent.Ops.
const (
	NetOpConnect    = 1 << iota // connect Local:LPort to Remote:RPort
	NetOpListen                 // listen on Local:LPort (a wildcard: every address)
	NetOpBind                   // UDP: receive on Local:LPort
	NetOpTx                     // stream data waits to be sent (NetTx)
	NetOpDgram                  // datagrams wait to be sent (NetDgramOut)
	NetOpShutWr                 // send a FIN once the data before it is sent
	NetOpClose                  // the socket closed: send what is left, then FIN; then NetRelease
	NetOpAbort                  // the socket closed with a RST (unread data, SO_LINGER 0); then NetRelease
	NetOpRxRoom                 // its ring has room again (after a short NetRx)
	NetOpAcceptRoom             // a listener's queue has room again (after NetAccepted's EAGAIN)
)
