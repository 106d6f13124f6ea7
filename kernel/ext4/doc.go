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
// cache (inode.go) a fixed direct-mapped table. crc32c and crc16 use
// tables generated as literals (tables.go). kernel/kcontext_test.go checks
// it on a built image.
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
func crc32c(crc uint32, b []byte) uint32 {
	t := &crc32c8
	for len(b) >= 8 { // eight bytes a step (slicing-by-8)
		crc ^= uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		crc = t[0][b[7]] ^ t[1][b[6]] ^ t[2][b[5]] ^ t[3][b[4]] ^
			t[4][crc>>24] ^ t[5][crc>>16&0xff] ^ t[6][crc>>8&0xff] ^ t[7][crc&0xff]
		b = b[8:]
	}
	for _, c := range b {
		crc = t[0][byte(crc)^c] ^ crc>>8
	}
	return crc
}

// crc32cZero continues a crc32c over n zero bytes (a checksum field).
func crc32cZero(crc uint32, n int) uint32 {
	for ; n > 0; n-- {
		crc = crc32c8[0][byte(crc)] ^ crc>>8
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
