package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"yolk/qemu"
	"yolk/qemu/image"
)

// diskImage is yolk image: a built amd64 ELF (yolk build's output) into
// a GPT disk image that boots with BIOS and UEFI through GRUB, its
// command line in grub.cfg (docs/disk-image.md). It takes the ELF, as
// yolk run does, rather than a package: one build goes into every format,
// and the arguments after it are the program's, as for yolk run.
func diskImage(args []string) int {
	fs := flag.NewFlagSet("yolk image", flag.ExitOnError)
	out := fs.String("o", "", "the image to write (required)")
	format := fs.String("format", "", "raw (the disk), gce (disk.raw in a gzip'd GNU tar: GCE's image upload) or qcow2 (default: from -o's suffix: .tar.gz gce, .qcow2 qcow2, else raw)")
	sizeFlag := fs.String("size", "1G", "the disk's size (K, M, G, T suffixes; gce: whole GiB)")
	var env envFlag
	fs.Var(&env, "e", "KEY=VALUE for the guest environment, or a kernel option such as yolk.net=ADDR/PREFIX,GATEWAY[,DNS] (repeatable): into grub.cfg")
	dir := fs.String("dir", "", "build this host `directory` into the image (read-only, at its absolute path; the program starts there)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: yolk image [-format raw|gce|qcow2] [-size 1G] [-e KEY=VALUE ...] [-dir DIR] -o OUT app.elf [arg ...]")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if fs.NArg() < 1 || *out == "" {
		fs.Usage()
		return 2
	}
	f := *format
	if f == "" {
		switch {
		case strings.HasSuffix(*out, ".tar.gz"):
			f = image.DiskGCE
		case strings.HasSuffix(*out, ".qcow2"):
			f = image.DiskQCOW2
		default:
			f = image.DiskRaw
		}
	}
	if !slices.Contains(image.DiskFormats, f) {
		fmt.Fprintf(os.Stderr, "yolk image: -format %q: want %s\n", f, strings.Join(image.DiskFormats, ", "))
		return 2
	}
	size, err := image.ParseSize(*sizeFlag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "yolk image: -size: %v\n", err)
		return 2
	}
	if arch, err := qemu.ImageArch(fs.Arg(0)); err != nil || arch != "amd64" {
		if err == nil {
			err = fmt.Errorf("%s is an %s image: a disk image boots a PC (amd64)", fs.Arg(0), arch)
		}
		fmt.Fprintf(os.Stderr, "yolk image: %v\n", err)
		return 2
	}
	opt := image.DiskOptions{Output: *out, Format: f, Size: size, Args: fs.Args()[1:]}
	if *dir != "" {
		tmp, err := os.MkdirTemp("", "yolk-image-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "yolk: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		if opt.Initrd, err = dirArchive(*dir, tmp, &env); err != nil {
			fmt.Fprintf(os.Stderr, "yolk image: -dir: %v\n", err)
			return 2
		}
	}
	opt.Env = env
	if _, err := image.DiskGRUBConfig(opt.Env, opt.Args, false); err != nil {
		fmt.Fprintf(os.Stderr, "yolk image: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := image.BuildDisk(ctx, fs.Arg(0), opt); err != nil {
		fmt.Fprintf(os.Stderr, "yolk image: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "yolk: wrote %s (%s, a %d MiB GPT disk: BIOS and UEFI through GRUB; command line in %s on the EFI system partition)\n",
		*out, f, size>>20, image.DiskGRUBCfg)
	return 0
}
