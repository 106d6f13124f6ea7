package linuxref

// Disks for linuxref -disk: every boot gets its own copy of each disk
// image, made just before it (holes kept), judged by e2fsck -fn after it
// and removed unless e2fsck found a fault.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"yolk/qemu"
)

// FreshDisks copies each disk's image into dir as <name>-disk<i>.img
// and returns the disks naming the copies.
func FreshDisks(disks []qemu.Disk, dir, name string) ([]qemu.Disk, error) {
	out := make([]qemu.Disk, len(disks))
	for i, d := range disks {
		p, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s-disk%d.img", name, i)))
		if err != nil {
			return nil, err
		}
		if err := copySparse(d.File, p); err != nil {
			return nil, err
		}
		d.File = p
		out[i] = d
	}
	return out, nil
}

// copySparse copies file from to a new file to, leaving a hole where a
// 64 KiB piece of from is all zeroes.
func copySparse(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	buf, zero := make([]byte, 64<<10), make([]byte, 64<<10)
	var off int64
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, werr := dst.WriteAt(buf[:n], off); werr != nil {
				dst.Close()
				return werr
			}
		}
		off += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			dst.Close()
			return err
		}
	}
	if err := dst.Truncate(off); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// CheckDisks runs e2fsck -fn on each disk a boot used and removes the
// clean ones: "clean" or what e2fsck said (that copy is kept). Without
// e2fsck it says so and keeps them.
func CheckDisks(disks []qemu.Disk) string {
	if len(disks) == 0 {
		return ""
	}
	if _, err := exec.LookPath("e2fsck"); err != nil {
		return "disks not checked (no e2fsck: Debian's e2fsprogs)"
	}
	note := "e2fsck -fn clean"
	for _, d := range disks {
		out, err := exec.Command("e2fsck", "-fn", d.File).CombinedOutput()
		if err != nil {
			note = fmt.Sprintf("e2fsck -fn %s: %v (kept)\n%s", d.File, err, out)
			continue
		}
		os.Remove(d.File)
	}
	return note
}
