package fs

import "golang.org/x/sys/unix"

// BlockNode is the device number of the block device node path names
// (following a last symbolic link unless nofollow), which Open refuses
// with ENXIO: the kernel opens such a node on its block layer. ok is
// false if path names no block device node.
func (f *FS[E]) BlockNode(dir int, path []byte, nofollow bool) (rdev uint64, ok bool) {
	f.env.Lock()
	defer f.env.Unlock()
	wm := follow
	if nofollow {
		wm = slashFollow
	}
	r, e := f.walk(dir, path, wm)
	if e != 0 || r.ino < 0 || f.inodes[r.ino].mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, false
	}
	return f.inodes[r.ino].rdev, true
}
