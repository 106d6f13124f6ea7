package main

// -mark DEV: before each benchmark variant the program reads one 4 KiB
// block of the raw disk DEV with O_DIRECT, the K-th variant's at 4 KiB·K
// before the disk's end, and prints "diskbench: mark K NAME sector S". In
// a QEMU trace of the disk's requests (virtio_blk_handle_read gives the
// sector) that read is where variant K's requests begin: tracecount
// splits the trace there.

import (
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

var markDev = flag.String("mark", "", "read a block of this raw disk (/dev/vda) before each variant, as a marker in a QEMU trace")

var marks struct {
	f    *os.File
	size int64
	n    int
	buf  []byte
}

// mark reads variant name's marker block, if -mark asks for markers.
func mark(name string) {
	if *markDev == "" {
		return
	}
	m := &marks
	if m.f == nil {
		f, err := os.OpenFile(*markDev, os.O_RDONLY|unix.O_DIRECT, 0)
		if err == nil {
			m.size, err = f.Seek(0, io.SeekEnd)
		}
		if err == nil {
			m.buf, err = alignedBuf(page)
		}
		if err != nil {
			fmt.Printf("diskbench: -mark %s: %v\n", *markDev, err)
			*markDev = ""
			return
		}
		m.f = f
	}
	m.n++
	off := m.size - int64(m.n)*page
	fmt.Printf("diskbench: mark %d %s sector %d\n", m.n, name, off/512)
	if _, err := m.f.ReadAt(m.buf, off); err != nil {
		fmt.Printf("diskbench: mark %d: %v\n", m.n, err)
	}
}
