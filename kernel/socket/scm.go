package socket

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/mm"
	"yolk/kernel/net"
)

// Control messages on AF_UNIX sockets (SCM_RIGHTS, SCM_CREDENTIALS): the
// program's cmsghdr chains read and written as Linux's __scm_send,
// put_cmsg and scm_detach_fds do; the descriptors in flight are package
// net's (kernel/net/scm.go), each holding a reference to its object,
// which the kernel takes and installs (Env.FDRef, InstallRef, CloseRef).

const (
	cmsgHdrLen = 16     // sizeof(struct cmsghdr)
	optmemMax  = 131072 // net.core.optmem_max: sendmsg's control buffer bound (ENOBUFS)
	ourPid     = 1
)

func cmsgAlign(n uintptr) uintptr { return (n + 7) &^ 7 }

// scmSend reads the control data of h into c (Linux's __scm_send):
// EINVAL for a bad cmsg_len, an unknown SOL_SOCKET type or more than
// SCM_MAX_FD descriptors, EBADF for a descriptor that is not open,
// EINVAL (as dup) for the runtime's own epoll and eventfd descriptors,
// and for credentials EINVAL for the invalid ids (-1), ESRCH for a pid
// that is not ours. The program is root, as yolk's getuid says, so other
// ids are not EPERM: Linux lets a process with CAP_SETUID and
// CAP_SETGID claim any. Other levels are skipped, as Linux's. On error
// the caller drops what c holds (CtlDrop).
func (k Calls[E]) scmSend(h *msghdr, c *net.Ctl) abi.Errno {
	size := h.controllen
	if size > 1<<31-1 || size > optmemMax {
		return abi.Errno(unix.ENOBUFS)
	}
	if size < cmsgHdrLen {
		return 0
	}
	for off := uintptr(0); off+cmsgHdrLen <= size; {
		// Each message is copied in on its own: the buffer may be
		// larger than the kernel stack, and another thread may unmap
		// it meanwhile.
		var b [cmsgHdrLen + 4*net.MaxFDs + 4]byte
		if mm.CopyIn(b[:cmsgHdrLen], h.control+off) != 0 {
			return abi.EFAULT
		}
		clen := uintptr(binary.LittleEndian.Uint64(b[:]))
		level := int32(binary.LittleEndian.Uint32(b[8:]))
		typ := int32(binary.LittleEndian.Uint32(b[12:]))
		if clen < cmsgHdrLen || clen > size-off {
			return abi.EINVAL
		}
		if level == unix.SOL_SOCKET {
			if clen > uintptr(len(b)) {
				return abi.EINVAL // more than SCM_MAX_FD descriptors, or not a message Linux knows
			}
			if mm.CopyIn(b[cmsgHdrLen:clen], h.control+off+cmsgHdrLen) != 0 {
				return abi.EFAULT
			}
			switch typ {
			case unix.SCM_RIGHTS:
				if e := k.scmRights(b[cmsgHdrLen:clen], c); e != 0 {
					return e
				}
			case unix.SCM_CREDENTIALS:
				if clen != cmsgHdrLen+12 {
					return abi.EINVAL
				}
				pid := binary.LittleEndian.Uint32(b[16:])
				uid := binary.LittleEndian.Uint32(b[20:])
				gid := binary.LittleEndian.Uint32(b[24:])
				if uid == ^uint32(0) || gid == ^uint32(0) {
					return abi.EINVAL
				}
				if pid != ourPid {
					return abi.Errno(unix.ESRCH)
				}
				c.Cred = net.Cred{On: true, Pid: pid, Uid: uid, Gid: gid}
			default:
				return abi.EINVAL
			}
		}
		off += cmsgAlign(clen)
	}
	return 0
}

// scmRights adds the descriptors in b to c (Linux's scm_fp_copy).
func (k Calls[E]) scmRights(b []byte, c *net.Ctl) abi.Errno {
	num := len(b) / 4
	if num <= 0 {
		return 0
	}
	if num > net.MaxFDs || c.NFD+num > net.MaxFDs {
		return abi.EINVAL
	}
	for i := 0; i < num; i++ {
		fd := int(int32(binary.LittleEndian.Uint32(b[4*i:])))
		kind, h, e := k.env().FDRef(fd)
		if e != 0 {
			return e
		}
		if ne := k.socks().CtlAdd(c, kind, h); ne != 0 {
			return abi.Errno(ne)
		}
	}
	return 0
}

// discard closes the descriptors m received.
func (k Calls[E]) discard(m *net.Msg) {
	for {
		kind, h, ok := k.socks().TakeFD(&m.FDs)
		if !ok {
			return
		}
		k.env().CloseRef(kind, h)
	}
}

// cmsgOut is the program's control buffer as recvmsg fills it.
type cmsgOut struct {
	p, room uintptr
	flags   int32
}

// put writes one control message of level SOL_SOCKET, type typ and
// data (Linux's put_cmsg): cut to the room left, with MSG_CTRUNC.
func (o *cmsgOut) put(typ int32, data []byte) {
	if o.p == 0 || o.room < cmsgHdrLen {
		o.flags |= unix.MSG_CTRUNC
		return
	}
	cmlen := uintptr(cmsgHdrLen + len(data))
	if o.room < cmlen {
		o.flags |= unix.MSG_CTRUNC
		cmlen = o.room
	}
	var b [cmsgHdrLen + 16]byte // the largest data put writes: credentials
	binary.LittleEndian.PutUint64(b[:], uint64(cmlen))
	binary.LittleEndian.PutUint32(b[8:], unix.SOL_SOCKET)
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	copy(b[cmsgHdrLen:], data)
	if mm.CopyOut(o.p, b[:cmlen]) != 0 {
		return // Linux's put_cmsg fails with EFAULT, which scm_recv ignores
	}
	adv := min(cmsgAlign(uintptr(cmsgHdrLen+len(data))), o.room)
	o.p += adv
	o.room -= adv
}

// rights installs m's descriptors, as many as o's room takes, and
// writes their SCM_RIGHTS message (Linux's scm_detach_fds); the rest are
// closed and the message is MSG_CTRUNC.
func (k Calls[E]) rights(o *cmsgOut, m *net.Msg, cloexec bool) {
	fdmax := 0
	if o.room > cmsgHdrLen {
		fdmax = int((o.room - cmsgHdrLen) / 4)
	}
	fdmax = min(fdmax, m.NFD)
	var b [cmsgHdrLen + 4*net.MaxFDs]byte
	if fdmax > 0 && !mm.UserW(o.p, uintptr(cmsgHdrLen+fdmax*4)) {
		fdmax = 0 // Linux's put_user fails: no descriptor is installed
	}
	i := 0
	for ; i < fdmax; i++ {
		kind, h, ok := k.socks().TakeFD(&m.FDs)
		if !ok {
			break
		}
		fd, e := k.env().InstallRef(kind, h, cloexec)
		if e != 0 {
			break
		}
		binary.LittleEndian.PutUint32(b[cmsgHdrLen+4*i:], uint32(fd))
	}
	if i > 0 {
		binary.LittleEndian.PutUint64(b[:], uint64(cmsgHdrLen+4*i))
		binary.LittleEndian.PutUint32(b[8:], unix.SOL_SOCKET)
		binary.LittleEndian.PutUint32(b[12:], unix.SCM_RIGHTS)
		// Unmapped since the check: the descriptors stay installed,
		// as Linux's when its put_user fails after the install.
		mm.CopyOut(o.p, b[:cmsgHdrLen+4*i])
		adv := min(cmsgAlign(uintptr(cmsgHdrLen+4*i)), o.room)
		o.p += adv
		o.room -= adv
	}
	if i < m.NFD {
		o.flags |= unix.MSG_CTRUNC
	}
	k.discard(m)
}

// scmRecv writes m's control data to h's control buffer (Linux's
// scm_recv_unix: credentials first if the socket has SO_PASSCRED, then
// the descriptors; no buffer at all is MSG_CTRUNC if there was
// anything) and returns the flags it adds; h.controllen becomes the
// length written.
func (k Calls[E]) scmRecv(h *msghdr, m *net.Msg, cloexec bool) int32 {
	o := cmsgOut{p: h.control, room: h.controllen}
	if o.p == 0 {
		if m.Cred.On || m.FDs != 0 {
			o.flags |= unix.MSG_CTRUNC
		}
		k.discard(m)
		h.controllen = 0
		return o.flags
	}
	if m.Cred.On {
		var c [12]byte
		binary.LittleEndian.PutUint32(c[0:], m.Cred.Pid)
		binary.LittleEndian.PutUint32(c[4:], m.Cred.Uid)
		binary.LittleEndian.PutUint32(c[8:], m.Cred.Gid)
		o.put(unix.SCM_CREDENTIALS, c[:])
	}
	if m.FDs != 0 {
		k.rights(&o, m, cloexec)
	}
	h.controllen = o.p - h.control
	return o.flags
}
