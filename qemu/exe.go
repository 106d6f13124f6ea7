package qemu

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ExeGuestDir is where the guest sees its own image file: the kernel makes
// /proc/1/exe (so /proc/self/exe) a symbolic link to it, named by the
// kernel option yolk.exe=PATH.
const ExeGuestDir = "/yolk/exe"

// exeShare gives the guest its image file for /proc/self/exe: a private
// temporary directory holding a hard link to c.Image (a copy when the link
// fails), shared read-only at ExeGuestDir (never the image's own
// directory), and yolk.exe in c.Env. It does nothing where the machine has
// no virtio-9p (a board, the Firecracker and Cloud Hypervisor shapes) or the image carries its
// own command line (a board), all four
// shares are taken, or a share of c's is at or under ExeGuestDir or holds
// it. The returned function removes the directory.
func exeShare(c *Config) (cleanup func(), err error) {
	cleanup = func() {}
	if c.Board != "" || vmmMachine(c.Machine) || len(c.Shares) >= 4 {
		return cleanup, nil
	}
	for _, sh := range c.Shares {
		if sh.GuestPath == ExeGuestDir || strings.HasPrefix(sh.GuestPath, ExeGuestDir+"/") || strings.HasPrefix(ExeGuestDir, sh.GuestPath+"/") {
			return cleanup, nil
		}
	}
	dir, err := os.MkdirTemp("", "yolk-exe-")
	if err != nil {
		return cleanup, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	name := exeName(filepath.Base(c.Image))
	if err := linkOrCopy(c.Image, filepath.Join(dir, name)); err != nil {
		cleanup()
		return func() {}, err
	}
	c.Shares = append(c.Shares[:len(c.Shares):len(c.Shares)], Share{HostDir: dir, GuestPath: ExeGuestDir, ReadOnly: true})
	c.Env = append(c.Env[:len(c.Env):len(c.Env)], "yolk.exe="+path.Join(ExeGuestDir, name))
	return cleanup, nil
}

// exeName is the image's name in the guest: its host name when that is a
// plain word of the kernel command line, "exe" otherwise.
func exeName(base string) string {
	if base == "." || base == ".." || len(base) > 200 {
		return "exe"
	}
	for _, r := range base {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r)) {
			return "exe"
		}
	}
	return base
}

// linkOrCopy makes dst a hard link to src, or a read-only copy of it when
// linking fails (another file system, a file system without links).
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
