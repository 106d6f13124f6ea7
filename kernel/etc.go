package kernel

import (
	"yolk/kernel/etc"
	"yolk/kernel/fs"
	"yolk/kernel/namei"
)

// The files under /etc that Go's resolver and lookups read, made at boot
// by vfsInit from kernel/etc's text, before the boot archive is unpacked:
// an archive's own file replaces one (fs.Untar unlinks what a file or
// link entry names). /root is made too: root's home (passwd).

// nodename is uname's nodename (sysUname) and /etc/hosts's name for
// 127.0.1.1.
const nodename = etc.Nodename

// etcDNS is the DNS server for resolv.conf, an IPv4 address; zero: none.
// The command line's network setting (yolk.net=ADDR/PREFIX,GATEWAY,DNS)
// sets it: it is parsed before vfsInit runs.
var etcDNS [4]byte

var (
	etcDir  = [...]byte{'/', 'e', 't', 'c'}
	rootDir = [...]byte{'/', 'r', 'o', 'o', 't'}
	etcPath [32]byte
	etcBuf  [etc.MaxSize]byte
)

// etcInit makes /etc and its files (mode 0644).
func etcInit() {
	vfs.Mkdir(fs.AtCWD, etcDir[:], 0o755)
	vfs.Mkdir(fs.AtCWD, rootDir[:], 0o700) // root's home (passwd)
	for i := 0; i < etc.Files; i++ {
		path, n := etc.File(i, etcBuf[:], etcDNS)
		p := copy(etcPath[:], path)
		if e := vfs.WriteFile(etcPath[:p], etcBuf[:n], 0o644); e != 0 {
			klogErrno("etc: ", etcPath[:p], int64(e))
		}
	}
	procInit()
}

// /proc and /sys: kernel/procfs's tree, mounted on empty directories
// (procfiles.go). /proc/self/exe is the image file when the command line
// names it (yolk.exe=PATH): the loaded segments are not the file (the
// program has changed its data), so yolk run gives the guest the image
// file itself, read-only on a share of its own (qemu/exe.go), and opens
// and stats that follow the link go there. Without yolk.exe — no virtio
// (the Raspberry Pi), a PC image, every share slot taken — readlink and
// open of /proc/self/exe are ENOENT (docs/files.md).
var (
	procDirs = [...]string{"/proc", "/sys"}
	exePath  [256]byte // yolk.exe=PATH: absolute
	exeLen   int
)

// procInit mounts /proc and /sys (etcInit calls it).
func procInit() {
	for i, path := range procDirs {
		p := copy(etcPath[:], path)
		e := vfs.Mkdir(fs.AtCWD, etcPath[:p], 0o555)
		if e == 0 {
			e = fs.Errno(mountAt(etcPath[:p], int32(namei.MountProc+i)))
		}
		if e != 0 {
			klogErrno("proc: ", etcPath[:p], int64(e))
		}
	}
}
