package linuxref

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultPackage is Debian's meta package for the cloud kernel, which has
// the 8250 serial console, initramfs support and PVH boot built in;
// ArmPackage the arm64 one (PL011 console, virt's devices), a foreign
// architecture's package: "dpkg --add-architecture arm64 && apt-get
// update" first.
const (
	DefaultPackage = "linux-image-cloud-amd64"
	ArmPackage     = "linux-image-cloud-arm64:arm64"
)

// SharePackage is the kernel package for a boot with shares: the cloud
// kernel is built without 9p (CONFIG_NET_9P unset); Debian's generic kernel
// has it, with virtio, as modules (ShareModules). Its console, initramfs
// and timers are built in as the cloud kernel's are.
var SharePackage = map[string]string{"amd64": "linux-image-amd64", "arm64": "linux-image-arm64:arm64"}

// Kernel is a Linux kernel taken from a Debian package.
type Kernel struct {
	Path    string // boot/vmlinuz-* extracted from the package
	Package string // the versioned package, e.g. linux-image-6.1.0-56-cloud-amd64
	Version string // the package version, e.g. 6.1.192-2
}

// FetchKernel resolves the meta package pkg to the versioned kernel package
// it depends on (apt-cache depends), downloads that package into dir with
// apt-get download unless a .deb of it is already there, extracts it with
// dpkg-deb and returns its boot/vmlinuz-*. It needs the apt package lists
// (apt-get update) but no root: nothing is installed. The kernel is for the
// comparison only and must not be committed.
func FetchKernel(ctx context.Context, dir, pkg string) (*Kernel, error) {
	if pkg == "" {
		pkg = DefaultPackage
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	real, err := resolvePackage(ctx, pkg)
	if err != nil {
		return nil, err
	}
	// A foreign package keeps its architecture qualifier for apt
	// ("name:arm64") but not in its file name.
	base, arch, _ := strings.Cut(real, ":")
	if arch == "" {
		if _, a, ok := strings.Cut(pkg, ":"); ok {
			arch, real = a, real+":"+a
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, base+"_*.deb"))
	if len(debs) == 0 {
		if _, err := command(ctx, dir, "apt-get", "download", real); err != nil {
			return nil, fmt.Errorf("downloading %s: %w (an arm64 kernel needs: dpkg --add-architecture arm64 && apt-get update)", real, err)
		}
		debs, _ = filepath.Glob(filepath.Join(dir, base+"_*.deb"))
		if len(debs) == 0 {
			return nil, fmt.Errorf("apt-get download %s left no %s_*.deb in %s", real, base, dir)
		}
	}
	deb := debs[len(debs)-1]
	ver, err := command(ctx, "", "dpkg-deb", "--field", deb, "Version")
	if err != nil {
		return nil, err
	}
	ver = strings.TrimSpace(ver)
	root := filepath.Join(dir, base+"_"+ver)
	kernels, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(kernels) == 0 {
		if _, err := command(ctx, "", "dpkg-deb", "-x", deb, root); err != nil {
			return nil, err
		}
		kernels, _ = filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	}
	if len(kernels) != 1 {
		return nil, fmt.Errorf("%s: want one boot/vmlinuz-*, found %d", deb, len(kernels))
	}
	return &Kernel{Path: kernels[0], Package: real, Version: ver}, nil
}

// resolvePackage follows a meta package such as linux-image-cloud-amd64 to
// the linux-image-* package it depends on; a versioned name is returned as is.
func resolvePackage(ctx context.Context, pkg string) (string, error) {
	out, err := command(ctx, "", "apt-cache", "depends", pkg)
	if err != nil {
		return "", fmt.Errorf("%w (are the package lists there? run: apt-get update)", err)
	}
	return kernelDependency(out, pkg)
}

// kernelDependency reads the output of "apt-cache depends pkg": the first
// "Depends: linux-image-*" line names the versioned package; without one, a
// linux-image-* pkg that apt knows is itself versioned.
func kernelDependency(out, pkg string) (string, error) {
	for _, l := range strings.Split(out, "\n") {
		dep, ok := strings.CutPrefix(strings.TrimSpace(l), "Depends: ")
		if ok && strings.HasPrefix(dep, "linux-image-") {
			return dep, nil
		}
	}
	if first, _, _ := strings.Cut(out, "\n"); strings.HasPrefix(pkg, "linux-image-") && strings.TrimSpace(first) == pkg {
		return pkg, nil
	}
	return "", fmt.Errorf("apt-cache depends %s names no linux-image-* package", pkg)
}

func command(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
