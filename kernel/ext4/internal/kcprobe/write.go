package main

import "yolk/kernel/ext4"

// probeWrite calls the write side.
func probeWrite(ino uint32) {
	name := buf[8:12]
	n, _ := fs.Mknod(ino, name, ext4.SIFREG|0o644, 0, 0, 0)
	d, _ := fs.Mkdir(ino, name, 0o755, 0, 0)
	fs.Symlink(d, name, buf[:100], 0, 0)
	fs.Link(n, d, buf[1:5])
	fs.WriteAt(n, buf[:], 4096)
	fs.Truncate(n, 10)
	fs.Fallocate(n, 0, 1<<20, true)
	fs.Setattr(n, ext4.Attr{Mask: ext4.AttrMode, Mode: 0o600})
	fs.Rename(ino, name, d, name)
	fs.Unlink(d, name)
	fs.Rmdir(ino, name)
}

func probeMisc() int {
	fs.Sync()
	u := fs.UUID()
	return len(fs.Label()) + int(u[0])
}
