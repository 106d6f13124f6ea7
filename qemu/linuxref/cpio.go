package linuxref

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// File type bits of a cpio mode, as in Linux's stat.h.
const (
	ModeDir     = 0o040000
	ModeRegular = 0o100000
	ModeCharDev = 0o020000
)

// CPIOWriter writes an initramfs archive in the "newc" cpio format (magic
// 070701) that Linux unpacks into its root file system at boot: per entry a
// 110-byte ASCII header of thirteen 8-digit hexadecimal fields, the
// NUL-terminated name and the data, each padded to a multiple of 4 bytes;
// the archive ends with the entry "TRAILER!!!". Owners are root, times are
// zero, inode numbers count up from 1: the archive depends only on what is
// written to it.
type CPIOWriter struct {
	w    *bufio.Writer
	ino  uint32
	err  error
	done bool
}

// NewCPIOWriter returns a writer of a newc archive on w. Close writes the
// trailer.
func NewCPIOWriter(w io.Writer) *CPIOWriter {
	return &CPIOWriter{w: bufio.NewWriter(w)}
}

// Dir adds a directory with permission bits perm.
func (c *CPIOWriter) Dir(name string, perm uint32) error {
	return c.entry(name, ModeDir|perm&0o7777, 2, 0, 0, nil)
}

// File adds a regular file with permission bits perm and contents data.
func (c *CPIOWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, ModeRegular|perm&0o7777, 1, 0, 0, data)
}

// CharDev adds a character device node (for example /dev/console, 5:1).
func (c *CPIOWriter) CharDev(name string, perm, major, minor uint32) error {
	return c.entry(name, ModeCharDev|perm&0o7777, 1, major, minor, nil)
}

// Close writes the trailer entry and flushes. It does not close the
// underlying writer.
func (c *CPIOWriter) Close() error {
	if c.done {
		return c.err
	}
	c.entry("TRAILER!!!", 0, 1, 0, 0, nil)
	c.done = true
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}

func (c *CPIOWriter) entry(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	if c.err != nil {
		return c.err
	}
	if c.done {
		return errors.New("cpio: write after Close")
	}
	name = strings.TrimPrefix(name, "/")
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		c.err = fmt.Errorf("cpio: bad entry name %q", name)
		return c.err
	}
	if uint64(len(data)) > 0xffffffff {
		c.err = fmt.Errorf("cpio: %s: %d bytes is too large for newc", name, len(data))
		return c.err
	}
	ino := uint32(0)
	if name != "TRAILER!!!" {
		c.ino++
		ino = c.ino
	}
	namesize := len(name) + 1
	// Fields: ino mode uid gid nlink mtime filesize devmajor devminor
	// rdevmajor rdevminor namesize check (0: no checksum).
	fmt.Fprintf(c.w, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmajor, rminor, namesize, 0)
	c.w.WriteString(name)
	c.w.WriteByte(0)
	c.pad(110 + namesize)
	c.w.Write(data)
	_, c.err = c.w.Write(make([]byte, pad4(len(data))))
	return c.err
}

// pad writes the zero bytes that align an n-byte run to 4.
func (c *CPIOWriter) pad(n int) { c.w.Write(make([]byte, pad4(n))) }

func pad4(n int) int { return (4 - n%4) % 4 }
