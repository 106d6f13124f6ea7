package kernel

import (
	"yolk/kernel/fs"
	"yolk/kernel/mm"
)

// The boot module (QEMU -initrd): a ustar archive of files the program
// should find in its file system, as `yolk test` passes a package's
// directory and testdata. It is unpacked into the in-memory file system at
// boot (fs.Untar: modes, times, read-only trees, an entry replacing a
// file etc.go made), and the module's frames go to the allocator.
// yolk.cwd=PATH makes PATH the working directory.

var (
	cwdPath [fs.PathMax]byte
	cwdLen  int
	bootTar fs.Tar
)

// unpackInitrd unpacks the archive at physical address pa, n bytes.
func unpackInitrd(pa, n uintptr) {
	if n != 0 {
		a := bytesAt(mm.Phys(pa), int(n))
		files, bytes, bad := fs.Untar(&vfs, &bootTar, a, initrdLog{})
		klog("initrd: ")
		kprintDec(int64(files))
		kprint(" entries, ")
		kprintDec(int64(bytes >> 10))
		kprint(" KiB")
		if bad != 0 {
			kprint(", ")
			kprintDec(int64(bad))
			kprint(" skipped")
		}
		kprint("\n")
		mm.FreeModule(pa, n)
	}
	if cwdLen != 0 && shares.MountOf(cwdPath[:cwdLen]) < 0 && disks.Root() < 0 { // on a share: shareStarted; on a root disk: rootMount
		if e := vfs.Chdir(fs.AtCWD, cwdPath[:cwdLen]); e != 0 {
			klogErrno("yolk.cwd: cannot change to ", cwdPath[:cwdLen], int64(e))
		}
	}
}

// initrdLog reports an entry the file system refused (fs.TarLog).
type initrdLog struct{}

func (initrdLog) Failed(p []byte, e fs.Errno) {
	klogErrno("initrd: ", p, int64(e))
}
