package qemu

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNVMeReadError: a disk on QEMU's NVMe controller whose reads of
// sector 2048 fail in the host (blkdebug injects EIO, which the
// controller answers with an error status): the program's read there
// gets EIO and the kernel says why on the console, and the disk goes on
// working (testdata/nvmeerr). q35, 1 CPU, TCG or KVM as chosen.
func TestNVMeReadError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and boots an image")
	}
	needQEMU(t)
	dir := t.TempDir()
	img := fixtureImage(t, "yolk/qemu/testdata/nvmeerr", dir, "amd64")
	disk, conf := filepath.Join(dir, "disk.img"), filepath.Join(dir, "blkdebug.conf")
	if err := os.WriteFile(disk, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 4<<20); err != nil {
		t.Fatal(err)
	}
	rule := "[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"2048\"\nonce = \"off\"\n"
	if err := os.WriteFile(conf, []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	var serial bytes.Buffer
	res, err := Run(t.Context(), Config{Image: img, Arch: "amd64", Machine: "q35", SMP: 1, Timeout: 3 * time.Minute,
		Stdout: &serial, Stderr: &serial,
		Extra: []string{"-drive", "file=blkdebug:" + conf + ":" + disk + ",if=none,id=bad,format=raw,cache=writeback",
			"-device", "nvme,drive=bad,serial=bad0"}})
	if err != nil {
		t.Fatal(err)
	}
	out := serial.String()
	if res.ExitCode != 0 || !strings.Contains(out, "nvmeerr: read at 1 MiB: read /dev/nvme0n1: input/output error (want") ||
		!strings.Contains(out, "yolk: nvme0: error status (opcode 2, namespace 1, LBA 2048") || strings.Contains(out, "yolk: fault") {
		t.Errorf("exit %d, want 0, EIO at 1 MiB and the console's line:\n%s", res.ExitCode, out)
	}
}
