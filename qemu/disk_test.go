package qemu

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"yolk/qemu/image"
)

// A disk image boot: firmware (bios on QEMU pc with SeaBIOS, uefi on q35
// with OVMF), the disk controller and the file booted (the GCE archive's
// disk.raw, or the QCOW2).
type diskBoot struct{ firmware, controller, format string }

// diskMatrix are the boots TestDiskImage makes with
// $YOLK_DISK_MATRIX=all (make images); without it only the first: GCE's
// boot (UEFI, virtio-scsi, the uploaded disk.raw).
func diskMatrix(all bool) []diskBoot {
	if !all {
		return []diskBoot{{"uefi", "virtio-scsi", image.DiskGCE}}
	}
	var m []diskBoot
	for _, f := range []string{image.DiskGCE, image.DiskQCOW2} {
		for _, fw := range []string{"uefi", "bios"} {
			for _, c := range DiskControllers {
				m = append(m, diskBoot{fw, c, f})
			}
		}
	}
	return m
}

// TestDiskImage writes examples/hello into disk images with yolk image's
// builder (an -e variable, arguments with a space, -exit 7 in grub.cfg)
// and boots them: GCE's archive unpacked to its disk.raw, on UEFI with
// virtio-scsi; with $YOLK_DISK_MATRIX=all also on SeaBIOS, from NVMe and
// virtio-blk, and the QCOW2. Each boot checks the program's output (its
// arguments and the variable read back) and its exit status.
func TestDiskImage(t *testing.T) {
	needQEMU(t)
	matrix := diskMatrix(os.Getenv("YOLK_DISK_MATRIX") == "all")
	if err := image.CheckDiskTools(image.DiskQCOW2); err != nil {
		t.Fatal(err)
	}
	if _, err := FindOVMF(); err != nil {
		t.Fatal(err)
	}
	root, err := image.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	elf := filepath.Join(dir, "hello.elf")
	var log bytes.Buffer
	if _, err := image.Build(t.Context(), filepath.Join(root, "examples", "hello"), image.Options{Output: elf, Stderr: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	opt := image.DiskOptions{Env: []string{"USER=gopher"}, Args: []string{"-exit", "7", "hello disk"}}
	files := map[string]string{}
	for _, b := range matrix {
		if files[b.format] != "" {
			continue
		}
		opt.Format, opt.Output = b.format, filepath.Join(dir, map[string]string{image.DiskGCE: "disk.tar.gz", image.DiskQCOW2: "disk.qcow2"}[b.format])
		start := time.Now()
		if err := image.BuildDisk(t.Context(), elf, opt); err != nil {
			t.Fatal(err)
		}
		t.Logf("built %s in %v", opt.Output, time.Since(start).Round(time.Millisecond))
		files[b.format] = opt.Output
		if b.format == image.DiskGCE {
			files[b.format] = unpackGCE(t, opt.Output, dir)
		}
	}
	const want = `hello from linux/amd64 on 1 CPU(s), args ["-exit" "7" "hello disk"], USER="gopher"`
	for _, b := range matrix {
		t.Run(fmt.Sprintf("%s-%s-%s", b.firmware, b.controller, b.format), func(t *testing.T) {
			machine := map[string]string{"bios": "pc", "uefi": "q35"}[b.firmware]
			res, out := runStub(t, "", machine, Config{Image: files[b.format], Board: "pc", Firmware: b.firmware, Disk: b.controller, Timeout: 3 * time.Minute})
			if res.ExitCode != 7 || !strings.Contains(out, "\n"+want+"\n") || !strings.Contains(out, "Multiboot2 entry") {
				t.Fatalf("exit %d (want 7), %v; want the line %s\n%s", res.ExitCode, res.Messages, want, out)
			}
			t.Logf("exit 7 after %v", res.Elapsed.Round(time.Millisecond))
		})
	}
}

// unpackGCE extracts disk.raw from GCE's archive into dir, keeping its
// holes, and checks that it is the archive's only entry and a whole
// number of GiB.
func unpackGCE(t *testing.T, archive, dir string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != "disk.raw" || hdr.Size%(1<<30) != 0 {
		t.Fatalf("GCE archive: %+v, %v; want disk.raw, whole GiB", hdr, err)
	}
	raw := filepath.Join(dir, "disk.raw")
	o, err := os.Create(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	buf := make([]byte, 64<<10)
	zero := make([]byte, len(buf))
	var off int64
	for {
		n, err := io.ReadFull(tr, buf)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, err := o.WriteAt(buf[:n], off); err != nil {
				t.Fatal(err)
			}
		}
		off += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Truncate(off); err != nil || off != hdr.Size {
		t.Fatalf("disk.raw: %d bytes of %d, %v", off, hdr.Size, err)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("GCE archive: a second entry (%v)", err)
	}
	return raw
}
