// Command kcprobe links every entry point of kernel/ext4 with an Env of
// the kernel's shape (an empty struct), so that kernel/kcontext_test.go
// disassembles the package's code as the kernel will link it, before the
// kernel mounts disks. It is built, never run: its disk answers EIO.
package main

import (
	"yolk/kernel/abi"
	"yolk/kernel/ext4"
)

type env struct{}

func (env) AllocPage() uintptr                     { return 0 }
func (env) FreePage(uintptr)                       {}
func (env) ReadAt(b []byte, off uint64) abi.Errno  { return 5 }
func (env) WriteAt(b []byte, off uint64) abi.Errno { return 5 }
func (env) Flush() abi.Errno                       { return 0 }
func (env) Now() int64                             { return 0 }
func (env) InUse(uint32) bool                      { return false }

type filler struct{ n int }

func (f *filler) Fill(ino, next uint64, typ uint8, name []byte) bool { f.n++; return f.n < 10 }

var (
	fs  ext4.FS[env]
	buf [4096]byte
	fl  filler
)

func main() {
	if _, e := fs.Mount(env{}, 0); e != 0 {
		return
	}
	ino, _ := fs.Lookup(ext4.RootIno, buf[:4])
	fs.Stat(ino)
	fs.ReadAt(ino, buf[:], 0)
	fs.Readlink(ino, buf[:])
	ext4.Readdir(&fs, ino, 0, &fl)
	fs.Statfs()
	fs.ReapOrphans(false)
	probeWrite(ino)
	probeMisc()
	fs.Unmount()
}
