package qemu

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"yolk/qemu/image"
)

// Fixtures: small programs under testdata that a test runs on the Linux
// host (the reference) and boots on yolk, then judges by their exit
// status, serial output or files.

// fixtureHost builds pkg for the host into dir and returns the binary.
func fixtureHost(t *testing.T, pkg, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// fixtureImage builds pkg as a yolk image for arch ("" is amd64) into dir
// and returns the image.
func fixtureImage(t *testing.T, pkg, dir, arch string) string {
	t.Helper()
	return fixtureImageTags(t, pkg, dir, arch, "")
}

// diskAppsTag is the build tag the applications' programs need
// (qemu/internal/sqlite and qemu/internal/bbolt; make diskapps).
const diskAppsTag = "yolk_diskapps"

// fixtureImageTags is fixtureImage with build tags.
func fixtureImageTags(t *testing.T, pkg, dir, arch, tags string) string {
	t.Helper()
	name := filepath.Base(pkg)
	if arch != "" {
		name += "-" + arch
	}
	img := filepath.Join(dir, name+".elf")
	var log bytes.Buffer
	if _, err := image.Build(t.Context(), pkg, image.Options{Output: img, Arch: arch, Tags: tags, Stderr: &log}); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, log.String())
	}
	return img
}
