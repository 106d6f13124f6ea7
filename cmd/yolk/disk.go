package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// yolk disk create -size 1G [-from DIR] [-label L] FILE: an ext4 image
// made by e2fsprogs' mkfs.ext4 (-d DIR copies a host tree in), for yolk
// run -disk (docs/disks.md).

const diskUsage = `usage: yolk disk create -size SIZE [-from DIR] [-label LABEL] FILE
  SIZE: bytes, or with K, M, G or T (powers of 1024); FILE must not exist`

func diskCmd(args []string) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(os.Stderr, diskUsage)
		return 2
	}
	fs := flag.NewFlagSet("disk create", flag.ContinueOnError)
	size := fs.String("size", "", "the image's size: bytes, or with K, M, G or T")
	from := fs.String("from", "", "a host directory copied into the file system's root (mkfs.ext4 -d)")
	label := fs.String("label", "", "the file system's label (at most 16 bytes)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *size == "" {
		fmt.Fprintln(os.Stderr, diskUsage)
		return 2
	}
	if err := diskCreate(fs.Arg(0), *size, *from, *label); err != nil {
		fmt.Fprintf(os.Stderr, "yolk disk create: %v\n", err)
		return 1
	}
	return 0
}

// parseSize reads SIZE: a number of bytes with an optional K, M, G or T
// (binary) suffix; at least 1 MiB, a multiple of 512.
func parseSize(s string) (int64, error) {
	mul := int64(1)
	if n := len(s); n > 0 {
		switch strings.ToUpper(s[n-1:]) {
		case "K":
			mul = 1 << 10
		case "M":
			mul = 1 << 20
		case "G":
			mul = 1 << 30
		case "T":
			mul = 1 << 40
		}
		if mul > 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v > (1<<50)/mul {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, or with K, M, G or T", s)
	}
	v *= mul
	if v < 1<<20 || v%512 != 0 {
		return 0, fmt.Errorf("size %d: want at least 1M and a multiple of 512 bytes", v)
	}
	return v, nil
}

// e2fsprog finds one of e2fsprogs' programs: on PATH, or in /usr/sbin and
// /sbin (not on a user's PATH on Debian).
func e2fsprog(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(d, name); fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: install Debian's e2fsprogs (sudo apt-get install e2fsprogs; make qemu installs it)", name)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// diskCreate makes FILE, size bytes, an ext4 file system (mkfs.ext4's
// defaults: Debian's e2fsprogs 1.47 gives extents, 64bit, flex_bg,
// metadata_csum, a journal), with dir's tree in it and the label.
func diskCreate(file, size, dir, label string) error {
	n, err := parseSize(size)
	if err != nil {
		return err
	}
	if len(label) > 16 {
		return fmt.Errorf("label %q: at most 16 bytes", label)
	}
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("-from %s: not a directory", dir)
		}
	}
	mkfs, err := e2fsprog("mkfs.ext4")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = f.Truncate(n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
		return err
	}
	args := []string{"-q", "-F", "-t", "ext4"}
	if label != "" {
		args = append(args, "-L", label)
	}
	if dir != "" {
		args = append(args, "-d", dir)
	}
	args = append(args, file)
	out, err := exec.Command(mkfs, args...).CombinedOutput()
	if err != nil {
		os.Remove(file)
		return errors.New(strings.TrimSpace(fmt.Sprintf("mkfs.ext4: %v\n%s", err, out)))
	}
	return nil
}
