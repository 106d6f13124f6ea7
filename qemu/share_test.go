package qemu

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The host's side of the guest's TestShare and TestShareReadOnly
// (kernel/selftest/share.go): a writable share with files the guest
// reads and a read-only one; when the guest prints its check line the
// host looks at what it wrote and answers in out/ack, and after the run
// it checks what the guest left.

const shareCheckLine = "yolk-share: check "

// shareBigMiB is the big file's size in TestGuest: small enough for
// seconds under TCG on every machine; YOLK_SHARE_MIB sets another (64
// for the figure).
const shareBigMiB = 8

type shareHost struct {
	dir, ro string
	shares  []Share
	env     []string
	mib     int
	mu      sync.Mutex
	checked string // the check's outcome: "" not yet, "ok" or the problem
}

func startShare(t *testing.T) *shareHost {
	s := &shareHost{dir: t.TempDir(), ro: t.TempDir(), mib: shareBigMiB}
	if v := os.Getenv("YOLK_SHARE_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("YOLK_SHARE_MIB=%q: want a positive number", v)
		}
		s.mib = n
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	in := filepath.Join(s.dir, "in")
	must(os.MkdirAll(filepath.Join(in, "full"), 0o755))
	must(os.WriteFile(filepath.Join(in, "full", "x"), nil, 0o644))
	must(os.WriteFile(filepath.Join(in, "hello.txt"), []byte("hello from the host\n"), 0o644))
	must(os.WriteFile(filepath.Join(in, "secret"), []byte("x"), 0))
	// The guest must get what the host gets: EACCES for an ordinary
	// user, success for root (QEMU's calls are this user's).
	var secret syscall.Errno
	if f, err := os.Open(filepath.Join(in, "secret")); err != nil {
		if !errors.As(err, &secret) {
			t.Fatal(err)
		}
	} else {
		f.Close()
	}
	must(os.WriteFile(filepath.Join(s.ro, "ro.txt"), []byte("read only\n"), 0o644))
	// The writable share at a guest path of its own; the read-only one
	// at its host path (the default).
	const guestDir = "/yolk/share"
	s.shares = []Share{{HostDir: s.dir, GuestPath: guestDir}, {HostDir: s.ro, GuestPath: filepath.ToSlash(s.ro), ReadOnly: true}}
	s.env = []string{
		"YOLK_SHARE_DIR=" + guestDir,
		"YOLK_SHARE_RO=" + filepath.ToSlash(s.ro),
		"YOLK_SHARE_SECRET=" + strconv.Itoa(int(secret)),
		"YOLK_SHARE_BIG=" + strconv.Itoa(s.mib),
	}
	return s
}

// bigSum is the checksum of the guest's big file (shareBigBlock).
func (s *shareHost) bigSum() []byte {
	h := sha256.New()
	blk := make([]byte, 4096)
	for i := 0; i < s.mib<<8; i++ {
		d := strconv.Itoa(i) + " "
		for j := 0; j < len(blk); j += len(d) {
			copy(blk[j:], d)
		}
		h.Write(blk)
	}
	return h.Sum(nil)
}

// line answers the guest's check line.
func (s *shareHost) line(l string) {
	sum, ok := strings.CutPrefix(l, shareCheckLine)
	if !ok {
		return
	}
	res := "ok"
	if err := s.check(sum); err != nil {
		res = err.Error()
	}
	s.mu.Lock()
	s.checked = res
	s.mu.Unlock()
	os.WriteFile(filepath.Join(s.dir, "out", "ack"), []byte(res+"\n"), 0o644)
}

// check looks at what the guest wrote by the check line: sum is the big
// file's checksum as the guest computed it.
func (s *shareHost) check(sum string) error {
	out := filepath.Join(s.dir, "out")
	b, err := os.ReadFile(filepath.Join(out, "b.txt"))
	if err != nil || string(b) != "hello!" {
		return fmt.Errorf("out/b.txt on the host: %q, %v", b, err)
	}
	st, err := os.Lstat(filepath.Join(out, "b.txt"))
	if err != nil || st.Mode() != 0o600 || !st.ModTime().Equal(time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)) {
		return fmt.Errorf("out/b.txt's mode and time on the host: %v %v, %v", st.Mode(), st.ModTime(), err)
	}
	if _, err := os.Lstat(filepath.Join(out, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("out/a.txt (renamed) is still on the host: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(out, "sub")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("out/sub (removed) is still on the host: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(out, "link")); err != nil || l != "b.txt" {
		return fmt.Errorf("out/link on the host: %q, %v", l, err)
	}
	f, err := os.Open(filepath.Join(out, "big"))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := f.WriteTo(h)
	if err != nil || n != int64(s.mib)<<20 {
		return fmt.Errorf("out/big on the host: %d bytes, %v", n, err)
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), hex.EncodeToString(s.bigSum()); got != want || sum != want {
		return fmt.Errorf("out/big's checksum: host file %s, guest %s, want %s", got, sum, want)
	}
	return nil
}

// done checks the end state after the run; run says whether the guest's
// TestShare ran (not skipped).
func (s *shareHost) done(t *testing.T, ran bool) {
	s.mu.Lock()
	checked := s.checked
	s.mu.Unlock()
	if !ran {
		return
	}
	if checked != "ok" {
		t.Errorf("the host's check of the share: %q", checked)
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "out"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); err != nil || got != "b.txt big link" {
		t.Errorf("out/ on the host after the run: %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(s.ro, "ro.txt")); err != nil || !bytes.Equal(b, []byte("read only\n")) {
		t.Errorf("the read-only share's file after the run: %q, %v", b, err)
	}
}

// list is the shares to configure (none for a nil host side).
func (s *shareHost) list() []Share {
	if s == nil {
		return nil
	}
	return s.shares
}

// TestShareArgs: -share's parsing, its QEMU arguments and kernel option
// per machine, and the refusals (a missing directory before the boot,
// the boards without virtio or with a built-in command line).
func TestShareArgs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		in   string
		want Share
	}{
		{dir, Share{dir, dir, false}},
		{dir + ":/data", Share{dir, "/data", false}},
		{dir + ":ro", Share{dir, dir, true}},
		{dir + ":/data:ro", Share{dir, "/data", true}},
	} {
		got, err := ParseShare(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseShare(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", dir + "/missing", dir + ":data", dir + ":/", dir + ":/a/../b", dir + ":/a:/b", filepath.Join(dir, "f")} {
		if bad == filepath.Join(dir, "f") {
			os.WriteFile(bad, nil, 0o644)
		}
		if _, err := ParseShare(bad); err == nil {
			t.Errorf("ParseShare(%q) accepted", bad)
		}
	}
	if _, err := ParseShare(dir + "/missing"); err == nil || !strings.Contains(err.Error(), "host directory "+dir+"/missing: no such file or directory") {
		t.Errorf("a missing directory's error: %v", err)
	}
	shares := []Share{{dir, "/data", false}, {dir, "/ro", true}}
	args, err := QEMUArgs(Config{Image: "app.elf", Machine: "microvm", Shares: shares})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{
		"-global virtio-mmio.force-legacy=false -fsdev local,id=fs0,path=" + dir + ",security_model=none -device virtio-9p-device,fsdev=fs0,mount_tag=yolk0",
		"-fsdev local,id=fs1,path=" + dir + ",security_model=none,readonly=on -device virtio-9p-device,fsdev=fs1,mount_tag=yolk1",
		"yolk.share=yolk0:/data yolk.share=yolk1:/ro --",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("microvm's arguments lack %q:\n%s", want, got)
		}
	}
	args, _ = QEMUArgs(Config{Image: "app.elf", Machine: "q35", Shares: shares[:1]})
	if got := strings.Join(args, " "); !strings.Contains(got, "-device virtio-9p-pci,fsdev=fs0,mount_tag=yolk0,disable-legacy=on,romfile=") {
		t.Errorf("q35's arguments: %s", got)
	}
	args, _ = QEMUArgs(Config{Image: "app.elf", Arch: "arm64", Shares: shares[:1]})
	if got := strings.Join(args, " "); !strings.Contains(got, "-device virtio-9p-device,fsdev=fs0") {
		t.Errorf("virt's arguments: %s", got)
	}
	for _, c := range []Config{
		{Image: "card", Arch: "arm64", Board: "rpi3", Shares: shares[:1]},
		{Image: "app.iso", Board: "pc", Shares: shares[:1]},
		{Image: "app.elf", Shares: []Share{{dir, "/a", false}, {dir, "/a", false}}},
		{Image: "app.elf", Shares: []Share{{dir + "/missing", "/a", false}}},
	} {
		if _, err := QEMUArgs(c); err == nil || !strings.Contains(err.Error(), "share") {
			t.Errorf("QEMUArgs(shares %+v, board %q): %v; want a refusal naming the share", c.Shares, c.Board, err)
		}
	}
}
