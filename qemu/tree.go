package qemu

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Tree builds the boot archive that gives the guest host files: a ustar
// archive passed with QEMU -initrd, which the kernel unpacks into its
// in-memory file system at the same absolute paths and makes read-only
// (kernel/initrd.go). Only directories, regular files and symbolic links
// are carried; ustar limits names to 255 bytes (a 155-byte directory
// prefix and a 100-byte name) and link targets to 100.
type Tree struct {
	buf  bytes.Buffer
	tw   *tar.Writer
	dirs map[string]bool
}

// NewTree returns an empty archive.
func NewTree() *Tree {
	t := &Tree{dirs: map[string]bool{"/": true}}
	t.tw = tar.NewWriter(&t.buf)
	return t
}

// AddDir adds the host directory host at the absolute guest path guest:
// its files and, with recursive, its subdirectories' contents too (without,
// only as empty directories).
func (t *Tree) AddDir(host, guest string, recursive bool) error {
	return filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(host, p)
		g := path.Join(guest, filepath.ToSlash(rel))
		if d.IsDir() {
			if err := t.dir(g, d); err != nil || p == host || recursive {
				return err
			}
			return filepath.SkipDir // listed, empty
		}
		return t.AddFile(p, g)
	})
}

// AddFile adds the host file or symbolic link host at guest path guest.
func (t *Tree) AddFile(host, guest string) error {
	fi, err := os.Lstat(host)
	if err != nil {
		return err
	}
	if err := t.dir(path.Dir(guest), nil); err != nil {
		return err
	}
	h := &tar.Header{Name: strings.TrimPrefix(guest, "/"), Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatUSTAR}
	switch {
	case fi.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	case fi.Mode()&fs.ModeSymlink != 0:
		if h.Linkname, err = os.Readlink(host); err != nil {
			return err
		}
		h.Typeflag = tar.TypeSymlink
	default:
		return nil // devices, sockets, FIFOs: not carried
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("boot archive: %s: %w", guest, err)
	}
	if h.Typeflag == tar.TypeReg {
		b, err := os.ReadFile(host)
		if err != nil {
			return err
		}
		if _, err := t.tw.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// dir adds directory g and its missing parents; d gives g's mode and time.
func (t *Tree) dir(g string, d fs.DirEntry) error {
	if t.dirs[g] {
		return nil
	}
	if err := t.dir(path.Dir(g), nil); err != nil {
		return err
	}
	h := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(g, "/") + "/", Mode: 0o755, Format: tar.FormatUSTAR}
	if d != nil {
		if fi, err := d.Info(); err == nil {
			h.Mode, h.ModTime = int64(fi.Mode().Perm()), fi.ModTime()
		}
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("boot archive: %s: %w", g, err)
	}
	t.dirs[g] = true
	return nil
}

// WriteFile ends the archive and writes it to name.
func (t *Tree) WriteFile(name string) error {
	if err := t.tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(name, t.buf.Bytes(), 0o644)
}
