// Command nvmeerr reads and writes /dev/nvme0n1 on a disk whose reads of
// sector 2048 (1 MiB in) fail in the host (QEMU's blkdebug):
// TestNVMeReadError boots it on q35. The failing read must end in EIO —
// not a hang, not a fault — and the disk must go on working: a read
// before it and a write, fsync and read after it succeed. It prints one
// line per step and exits 1 if a step went otherwise.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func main() {
	f, err := os.OpenFile("/dev/nvme0n1", os.O_RDWR, 0)
	if err != nil {
		fmt.Println("nvmeerr: open:", err)
		os.Exit(1)
	}
	ok := true
	step := func(what string, err error, want error) {
		good := errors.Is(err, want) || err == want
		fmt.Printf("nvmeerr: %s: %v (want %v)\n", what, err, want)
		ok = ok && good
	}
	buf := make([]byte, 4096)
	_, err = f.ReadAt(buf, 0)
	step("read at 0", err, nil)
	_, err = f.ReadAt(buf, 2048*512)
	step("read at 1 MiB", err, unix.EIO)
	w := bytes.Repeat([]byte("nvme"), 1024)
	_, err = f.WriteAt(w, 4096)
	step("write at 4096", err, nil)
	step("fsync", f.Sync(), nil)
	_, err = f.ReadAt(buf, 4096)
	if err == nil && !bytes.Equal(buf, w) {
		err = errors.New("read back differs")
	}
	step("read at 4096", err, nil)
	if !ok {
		os.Exit(1)
	}
}
