// Package ext4 reads and writes the ext4 file system (and ext2/ext3
// images, which are ext4 without some features) on a disk the kernel
// reaches through Env: the superblock and its feature rule, group
// descriptors, inodes, extent trees and the old indirect block maps,
// linear and hashed (htree) directories, symbolic links, inline data, and
// the write side through one transaction seam (tx.go) the jbd2 journal
// plugs into.
//
// Kernel-context Go: nothing here allocates on the Go heap, stores a Go
// pointer in memory the kernel writes, uses maps, interface values or
// func variables. The block cache (cache.go) is a fixed table of buffers,
// one page each, chained by a fixed hash and named by indices; the inode
// cache (inode.go) a fixed direct-mapped table. crc32c is
// kernel/internal/crc32c's; crc16 uses a table generated as a literal
// (tables.go). kernel/kcontext_test.go checks it on a built image.
//
// The caller serialises calls: one FS is used under one lock (the kernel's
// file layer holds it). Blocks larger than a page (4 KiB) are refused at
// mount, as Linux did before its large-folio support: a cached block is one
// page.
package ext4

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	crc32cpkg "yolk/kernel/internal/crc32c"
	"yolk/kernel/internal/pages"
)

// Env is what the kernel supplies: the disk and pages for the block
// cache. It must be a value type without pointers (in the kernel an empty
// struct): the FS stores it.
type Env interface {
	pages.Supplier
	// ReadAt and WriteAt move len(b) bytes at byte offset off of the
	// disk; both are multiples of 512.
	ReadAt(b []byte, off uint64) abi.Errno
	WriteAt(b []byte, off uint64) abi.Errno
	// Flush returns once what was written is on stable storage.
	Flush() abi.Errno
	// Now is the wall clock, nanoseconds since the Unix epoch (the
	// times of what the write side changes).
	Now() int64
	// InUse reports whether the kernel has inode ino open: its last
	// name's removal leaves it an orphan instead of freeing it.
	InUse(ino uint32) bool
}

// Errno is a Linux error number.
type Errno = abi.Errno

// The error numbers ext4 answers with beyond abi's.
const (
	EIO       = Errno(unix.EIO)
	EBADMSG   = Errno(unix.EBADMSG) // a checksum does not match (Linux's EFSBADCRC)
	EUCLEAN   = Errno(unix.EUCLEAN) // corrupted metadata (Linux's EFSCORRUPTED)
	EROFS     = Errno(unix.EROFS)
	ENOSPC    = Errno(unix.ENOSPC)
	EISDIR    = Errno(unix.EISDIR)
	ENOTEMPTY = Errno(unix.ENOTEMPTY)
	EFBIG     = Errno(unix.EFBIG)
	EMLINK    = Errno(unix.EMLINK)
	ENODATA   = Errno(unix.ENODATA)
	EUNATCH   = Errno(unix.EUNATCH)
)

// Magic is the superblock's magic number, statfs's f_type for ext2/3/4.
const Magic = 0xEF53

// NameMax is the longest name a directory entry holds.
const NameMax = 255

// mem is the n bytes at address a (a page the Env supplied).
func mem(a uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&a))), n)
}

func le16(b []byte, o int) uint32 { return uint32(b[o]) | uint32(b[o+1])<<8 }
func le32(b []byte, o int) uint32 {
	return uint32(b[o]) | uint32(b[o+1])<<8 | uint32(b[o+2])<<16 | uint32(b[o+3])<<24
}
func put16(b []byte, o int, v uint32) { b[o] = byte(v); b[o+1] = byte(v >> 8) }
func put32(b []byte, o int, v uint32) {
	b[o] = byte(v)
	b[o+1] = byte(v >> 8)
	b[o+2] = byte(v >> 16)
	b[o+3] = byte(v >> 24)
}

// crc32c continues a crc32c over b the way ext4 does: no inversion on
// either end (ext4_chksum); the standard crc32c of b is ^crc32c(^0, b).
func crc32c(crc uint32, b []byte) uint32 { return crc32cpkg.Update(crc, b) }

// crc32cZero continues a crc32c over n zero bytes (a checksum field).
func crc32cZero(crc uint32, n int) uint32 {
	var z [8]byte
	for ; n > 0; n -= len(z) {
		crc = crc32cpkg.Update(crc, z[:min(n, len(z))])
	}
	return crc
}

func crc32cU32(crc, v uint32) uint32 {
	var b [4]byte
	put32(b[:], 0, v)
	return crc32c(crc, b[:])
}

// crc16 continues the crc16 gdt_csum uses over b.
func crc16(crc uint16, b []byte) uint16 {
	for _, c := range b {
		crc = crc16Table[byte(crc)^c] ^ crc>>8
	}
	return crc
}
