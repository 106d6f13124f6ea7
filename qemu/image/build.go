// Package image turns an unmodified Go main package into an ELF image that
// QEMU boots bare-metal: amd64 through the PVH entry, arm64 (QEMU virt)
// through the ELF entry point.
//
// Build compiles the package with the stock toolchain (GOOS=linux
// GOARCH=amd64 or arm64, CGO_ENABLED=0; arm64 images linked at ArmTextAddr,
// see LinkFlags) and links the yolk kernel in by an -overlay that
// adds one generated file (a blank import of yolk/kernel) to the package, so
// the package needs no import of ours; a package of another module is built in
// a temporary workspace that uses both modules. BuildTest does the same for
// a package's test binary (go test -c), through an external test file, for
// any package including the standard library's; a package in the module
// cache (a dependency tested in place, or the standard library of a
// toolchain the go command fetched), where the go command refuses an
// overlay, is built through a link to its directory outside the cache.
// Patch then makes the image bootable and changes no other byte: on amd64
// it rewrites the Go linker's PT_NOTE (and that note's headers) into the
// Xen PHYS32_ENTRY note QEMU's PVH loader reads; on arm64 it sets the ELF
// header's e_entry to the kernel's entry, yolk/boot.entry.
//
// With Options.Board "pc" the output is instead a PC image, a hybrid ISO
// that GRUB boots on BIOS and UEFI machines (iso.go, multiboot2.go).
//
// The package runs on the host only. It does not check that the kernel boots;
// qemu.Run does.
package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ModulePath is the module path of yolk.
const ModulePath = "yolk"

// DefaultLinkPackage is the package the overlay imports into the main package.
const DefaultLinkPackage = "yolk/kernel"

// NetServicePackage is the TCP/IP service (gVisor's netstack) the overlay
// also imports when the program uses package net (Options.NetService).
const NetServicePackage = "yolk/netsvc"

// overlayFile is the name of the generated file added to the main package.
const overlayFile = "zz_yolk_link_gen.go"

// overlayTestFile is the name of the generated external test file BuildTest
// adds to a package.
const overlayTestFile = "zz_yolk_link_gen_test.go"

// Options control Build. The zero value builds with the defaults.
type Options struct {
	Output      string    // image path; default "<package dir name>.elf" (Board "pc": ".iso") in the working directory
	Arch        string    // GOARCH: "amd64" (default) or "arm64"
	Tags        string    // -tags for go build
	LDFlags     string    // -ldflags for go build
	Flags       []string  // other go build flags, as given (-gcflags=..., -trimpath, -cover, ...)
	LinkPackage string    // package imported by the overlay; default DefaultLinkPackage; "-" for none
	NetService  string    // "" or "auto": link NetServicePackage too when package net is among the dependencies; "on", "off"
	Entry       []string  // entry symbols tried in order; default DefaultEntrySymbol (amd64), ArmEntrySymbol (arm64)
	NoPatch     bool      // build only, leave the PT_NOTE alone
	Go          string    // go command; default "go"
	Stderr      io.Writer // go build's diagnostics; default os.Stderr

	// Board is "" for the ELF image QEMU's loaders boot; "rpi3" (arm64)
	// links the image at RPi3TextAddr (WriteRPi3 makes the card); "pc"
	// (amd64) makes Output a bootable PC image (BuildISO) instead of an
	// ELF image: the kernel gets a Multiboot2 header beside its PVH note,
	// and Cmdline and Initrd (a boot archive) are fixed in the image.
	Board   string
	Cmdline string // Board "pc": the kernel command line (qemu.Cmdline's encoding)
	Initrd  string // Board "pc": a boot archive file
}

// Result describes a built image.
type Result struct {
	Output  string     // path of the image
	PkgDir  string     // directory of the main package
	ModRoot string     // root of the package's module
	Patch   *PatchInfo // nil with NoPatch

	Multiboot2 *Multiboot2Info // Board "pc": the kernel's Multiboot2 header
}

// ModuleRoot returns the root directory of the yolk module: from the source
// location of this package when it is available (go run, go test), else from
// "go list -m" in the working directory, else from $YOLK_ROOT.
func ModuleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // qemu/image/build.go
		if isYolkRoot(root) {
			return root, nil
		}
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", ModulePath)
	if out, err := cmd.Output(); err == nil {
		if root := strings.TrimSpace(string(out)); isYolkRoot(root) {
			return root, nil
		}
	}
	if root := os.Getenv("YOLK_ROOT"); root != "" && isYolkRoot(root) {
		return root, nil
	}
	return "", errors.New("cannot find the yolk module root: run from inside the yolk checkout or set YOLK_ROOT")
}

func isYolkRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && modulePath(b) == ModulePath
}

// modulePath returns the module path declared in a go.mod file.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// Build compiles the Go main package pkg (a directory such as ./examples/hello,
// or an import path inside the yolk module) into a bootable image.
func Build(ctx context.Context, pkg string, opt Options) (*Result, error) {
	goCmd := opt.Go
	if goCmd == "" {
		goCmd = "go"
	}
	stderr := opt.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	pkgDir, err := resolvePackageDir(ctx, goCmd, root, pkg)
	if err != nil {
		return nil, err
	}
	modRoot, err := findModuleRoot(pkgDir)
	if err != nil {
		return nil, err
	}
	out := opt.Output
	if out == "" {
		out = filepath.Base(pkgDir) + ".elf"
		if opt.Board == "pc" {
			out = filepath.Base(pkgDir) + ".iso"
		}
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}

	arch, err := CheckArch(opt.Arch)
	if err != nil {
		return nil, err
	}
	name, err := goList(ctx, goCmd, pkgDir, buildEnv(arch), opt.Tags, "{{.Name}}")
	if err != nil {
		return nil, err
	}
	if name != "main" {
		return nil, fmt.Errorf("%s is package %s, not a main package", pkgDir, name)
	}
	return build(ctx, goCmd, stderr, root, target{dir: pkgDir, modRoot: modRoot, arg: "."}, out, opt)
}

// TestPackage names a package whose test binary BuildTest builds, as
// "go list" reports it.
type TestPackage struct {
	ImportPath string // import path, e.g. "strings" or "yolk/sync/ces"
	Dir        string // absolute package directory
	Name       string // package name (the external test file is package Name_test)
	Standard   bool   // in the standard library ($GOROOT/src)
	Module     string // module path ("" for the standard library)
	ModuleDir  string // the module's root directory
	Main       string // the main module's directory where the package was listed ("" if none): a module-cache package is built in its build list
}

// BuildTest compiles the test binary of p ("go test -c") into an image with
// the kernel linked in, as Build does for a main package: the overlay adds
// an external test file (package p.Name_test) that imports the kernel, so
// that standard-library packages and packages the kernel itself imports
// build without an import cycle. opt.Output is required. The caller checks
// that p has test files: without any, the binary would only run the kernel.
// Compiler diagnostics go to opt.Stderr.
func BuildTest(ctx context.Context, p TestPackage, opt Options) (*Result, error) {
	goCmd := opt.Go
	if goCmd == "" {
		goCmd = "go"
	}
	stderr := opt.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	if opt.Output == "" {
		return nil, errors.New("BuildTest needs an output path")
	}
	if p.Name == "" || p.Dir == "" || p.ImportPath == "" {
		return nil, fmt.Errorf("test package %+v: need import path, directory and name", p)
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	out, err := filepath.Abs(opt.Output)
	if err != nil {
		return nil, err
	}
	t := target{dir: p.Dir, arg: ".", test: p.Name}
	cache, goroot, err := goEnv2(ctx, goCmd, "GOMODCACHE", "GOROOT")
	if err != nil {
		return nil, err
	}
	switch {
	case p.Standard:
		// The std module cannot resolve yolk/kernel: build from the
		// yolk module by import path.
		t.cmdDir, t.modRoot, t.arg = root, root, p.ImportPath
		if cache != "" && within(goroot, cache) {
			// A toolchain the go command fetched lives in the module
			// cache, where -overlay may not add a file: run it through
			// an alias of its GOROOT outside the cache.
			alias, err := aliasDir(goroot)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(goroot, p.Dir)
			t.dir = filepath.Join(alias, rel)
			goCmd = filepath.Join(alias, "bin", "go")
			t.env = []string{"GOROOT=" + alias, "GOTOOLCHAIN=local"}
		}
	case cache != "" && within(p.Dir, cache):
		// A dependency tested in place: build it in the build list of
		// the main module it was listed from, its module replaced by an
		// alias of its module-cache directory (outside the cache, where
		// -overlay may add the kernel's file).
		if p.Module == "" || p.ModuleDir == "" {
			return nil, fmt.Errorf("%s is in the module cache but names no module", p.ImportPath)
		}
		alias, err := aliasDir(p.ModuleDir)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(p.ModuleDir, p.Dir)
		t.dir, t.arg, t.replace = filepath.Join(alias, rel), p.ImportPath, p.Module+" => "+strconv.Quote(alias)
		t.cmdDir, t.modRoot = root, root
		if p.Main != "" {
			t.cmdDir, t.modRoot = p.Main, p.Main
		}
	default:
		if t.modRoot, err = findModuleRoot(p.Dir); err != nil {
			return nil, err
		}
		if p.Main != "" && p.Main == t.modRoot {
			// From where go test runs, so that its diagnostics name
			// files relative to the same directory.
			if wd, err := os.Getwd(); err == nil && within(wd, p.Main) {
				t.cmdDir, t.arg = wd, p.ImportPath
			}
		}
	}
	return build(ctx, goCmd, stderr, root, t, out, opt)
}

// target is what build compiles.
type target struct {
	dir     string // package directory (where the overlay places its file)
	modRoot string // root of the package's module: a go.work joins it to yolk's when it differs
	cmdDir  string // directory go runs in; default dir
	arg     string // package argument to go build / go test
	test    string // non-empty: build the test binary; the package's name
	replace string // a go.work replace directive ("path => dir"), "" for none
	env     []string
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// goEnv2 returns two go env variables.
func goEnv2(ctx context.Context, goCmd, a, b string) (string, string, error) {
	out, err := exec.CommandContext(ctx, goCmd, "env", a, b).Output()
	if err != nil {
		return "", "", fmt.Errorf("go env %s %s: %w", a, b, err)
	}
	f := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(f) != 2 {
		return "", "", fmt.Errorf("go env %s %s: %q", a, b, out)
	}
	return f[0], f[1], nil
}

// aliasDir returns a symbolic link to dir outside the module cache, in
// yolk's cache directory, the same one for dir every time (so that the go
// command's build cache keeps what it compiled through it).
func aliasDir(dir string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(dir))
	link := filepath.Join(base, "yolk", "alias", fmt.Sprintf("%x", sum[:8]), filepath.Base(dir))
	if old, err := os.Readlink(link); err == nil && old == dir {
		return link, nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d", link, os.Getpid())
	if err := os.Symlink(dir, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, link); err != nil { // atomic: parallel builds agree
		os.Remove(tmp)
		return "", err
	}
	return link, nil
}

// Arches are the architectures the kernel runs on.
var Arches = []string{"amd64", "arm64"}

// CheckArch returns arch, "amd64" if empty, or an error if the kernel does
// not run on it.
func CheckArch(arch string) (string, error) {
	switch arch {
	case "":
		return "amd64", nil
	case "amd64", "arm64":
		return arch, nil
	}
	return "", fmt.Errorf("architecture %q: want amd64 or arm64", arch)
}

// ArmTextAddr is where arm64 images are linked (-T; the first PT_LOAD
// starts 4 KiB below, at 0x40200000): above the start of QEMU virt's RAM
// (0x40000000), where QEMU puts the device tree only when the image is
// linked above it, and 2 MiB aligned.
const ArmTextAddr = 0x40201000

// LinkFlags is the -ldflags value an image for arch is built with: user's
// flags, after "-T 0x40201000" (ArmTextAddr) for arm64. The linker takes
// the last -T it is given, so a -T among user's flags moves the image.
func LinkFlags(arch, user string) string {
	if arch == "arm64" {
		return strings.TrimSpace(fmt.Sprintf("-T %#x %s", ArmTextAddr, user))
	}
	return user
}

// buildEnv is the environment of every go command that builds for the kernel.
func buildEnv(arch string) []string {
	return append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
}

// build runs go build (or go test -c) for t with the kernel linked in and
// patches the image's entry note.
func build(ctx context.Context, goCmd string, stderr io.Writer, root string, t target, out string, opt Options) (*Result, error) {
	tmp, err := os.MkdirTemp("", "yolk-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	arch, err := CheckArch(opt.Arch)
	if err != nil {
		return nil, err
	}
	image := out // the ELF image go build writes
	ldflags := LinkFlags(arch, opt.LDFlags)
	entry := opt.Entry
	switch opt.Board {
	case "":
	case "rpi3":
		if arch != "arm64" {
			return nil, fmt.Errorf("board rpi3 is arm64, not %s", arch)
		}
		ldflags = strings.TrimSpace(fmt.Sprintf("-T %#x %s", RPi3TextAddr, opt.LDFlags))
		if len(entry) == 0 {
			entry = []string{RPi3EntrySymbol}
		}
	case "pc":
		if arch != "amd64" || opt.NoPatch {
			return nil, fmt.Errorf("board pc: want an amd64 image with its entry patched (arch %s)", arch)
		}
		if err := CheckISOTools(); err != nil {
			return nil, err
		}
		image = filepath.Join(tmp, "yolk.elf")
	default:
		return nil, fmt.Errorf("board %q: want rpi3 or pc", opt.Board)
	}
	if opt.Board != "pc" && (opt.Cmdline != "" || opt.Initrd != "") {
		return nil, errors.New("a command line or boot archive is built into PC images only (Board \"pc\"); other images take them when they boot")
	}
	env := append(buildEnv(arch), t.env...)
	if t.modRoot != root || t.replace != "" {
		work, err := writeGoWork(ctx, goCmd, env, tmp, root, t.modRoot, t.replace)
		if err != nil {
			return nil, err
		}
		env = append(env, "GOWORK="+work)
	}

	args := []string{"build", "-o", image}
	if t.test != "" {
		args = []string{"test", "-c", "-o", image}
	}
	if opt.Tags != "" {
		args = append(args, "-tags", opt.Tags)
	}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	args = append(args, opt.Flags...)
	link := opt.LinkPackage
	if link == "" {
		link = DefaultLinkPackage
	}
	links := []string{link}
	if link == DefaultLinkPackage {
		switch opt.NetService {
		case "on":
			links = append(links, NetServicePackage)
		case "", "auto":
			dir := t.dir
			if t.cmdDir != "" {
				dir = t.cmdDir
			}
			uses, err := usesNet(ctx, goCmd, dir, env, opt.Tags, t)
			if err != nil {
				return nil, err
			}
			if uses {
				links = append(links, NetServicePackage)
			}
		case "off":
		default:
			return nil, fmt.Errorf("network service %q: want auto, on or off", opt.NetService)
		}
	}
	if link != "-" {
		overlay, err := writeOverlay(tmp, t.dir, t.test, links...)
		if err != nil {
			return nil, err
		}
		args = append(args, "-overlay", overlay)
	}
	args = append(args, t.arg)

	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = t.dir
	if t.cmdDir != "" {
		cmd.Dir = t.cmdDir
	}
	cmd.Env = env
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return nil, &BuildError{Cmd: "go " + strings.Join(args, " "), Dir: cmd.Dir, Err: err}
	}
	res := &Result{Output: out, PkgDir: t.dir, ModRoot: t.modRoot}
	if opt.NoPatch {
		return res, nil
	}
	if res.Patch, err = Patch(image, entry...); err != nil {
		return nil, err
	}
	if opt.Board == "pc" {
		if res.Multiboot2, err = PatchMultiboot2(image, entry...); err != nil {
			return nil, err
		}
		if err := BuildISO(ctx, image, ISOOptions{Output: out, Cmdline: opt.Cmdline, Initrd: opt.Initrd}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// BuildError is a go command that failed (its diagnostics went to
// Options.Stderr), as opposed to an error before or after compiling.
type BuildError struct {
	Cmd string // "go build ..." or "go test -c ..."
	Dir string // where it ran
	Err error
}

func (e *BuildError) Error() string { return fmt.Sprintf("%s (in %s): %v", e.Cmd, e.Dir, e.Err) }
func (e *BuildError) Unwrap() error { return e.Err }

// resolvePackageDir turns pkg into an absolute package directory.
func resolvePackageDir(ctx context.Context, goCmd, root, pkg string) (string, error) {
	if filepath.IsAbs(pkg) || pkg == "." || pkg == ".." ||
		strings.HasPrefix(pkg, "./") || strings.HasPrefix(pkg, "../") {
		dir, err := filepath.Abs(pkg)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("package directory %s does not exist", pkg)
		}
		return dir, nil
	}
	if pkg != ModulePath && !strings.HasPrefix(pkg, ModulePath+"/") {
		return "", fmt.Errorf("%q: give a directory (./path/to/pkg) or an import path inside the yolk module", pkg)
	}
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, ModulePath), "/")))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("package %s does not exist (no directory %s)", pkg, dir)
	}
	return dir, nil
}

// findModuleRoot returns the nearest directory at or above dir with a go.mod.
func findModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside a Go module (no go.mod above it)", dir)
		}
	}
}

// writeGoWork writes a go.work that uses the yolk module and the package's
// module (and replaces a module, when replace is a directive), and returns
// its path.
func writeGoWork(ctx context.Context, goCmd string, env []string, tmp, root, modRoot, replace string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOVERSION")
	cmd.Env = env
	v, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	ver := strings.TrimPrefix(strings.TrimSpace(string(v)), "go")
	if i := strings.IndexAny(ver, " -"); i >= 0 { // "1.26.8 X:foo", devel versions
		ver = ver[:i]
	}
	use := "\t" + strconv.Quote(root) + "\n"
	if modRoot != root {
		use += "\t" + strconv.Quote(modRoot) + "\n"
	}
	work := fmt.Sprintf("go %s\n\nuse (\n%s)\n", ver, use)
	if replace != "" {
		work += "\nreplace " + replace + "\n"
	}
	path := filepath.Join(tmp, "go.work")
	return path, os.WriteFile(path, []byte(work), 0o644)
}

// writeOverlay writes the generated import file and the -overlay JSON that
// places it in pkgDir, and returns the JSON's path. With test set (the
// package's name) the file is an external test file, package test_test.
func writeOverlay(tmp, pkgDir, test string, links ...string) (string, error) {
	name, pkg := overlayFile, "main"
	if test != "" {
		name, pkg = overlayTestFile, test+"_test"
	}
	target := filepath.Join(pkgDir, name)
	if _, err := os.Stat(target); err == nil {
		return "", fmt.Errorf("%s already exists; yolk build adds a file of that name through -overlay", target)
	}
	src := fmt.Sprintf("// Code generated by yolk build. DO NOT EDIT.\n\npackage %s\n\n", pkg)
	for _, l := range links {
		src += fmt.Sprintf("import _ %q\n", l)
	}
	gen := filepath.Join(tmp, name)
	if err := os.WriteFile(gen, []byte(src), 0o644); err != nil {
		return "", err
	}
	js, err := json.Marshal(map[string]map[string]string{"Replace": {target: gen}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(tmp, "overlay.json")
	return path, os.WriteFile(path, js, 0o644)
}

// usesNet reports whether package net is among t's dependencies (its
// test's, for a test binary), as the build will see them.
func usesNet(ctx context.Context, goCmd, dir string, env []string, tags string, t target) (bool, error) {
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	if t.test != "" {
		args = append(args, "-test")
	}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, t.arg)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("go list -deps (in %s): %v\n%s", dir, err, strings.TrimSpace(errb.String()))
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == "net" {
			return true, nil
		}
	}
	return false, nil
}

func goList(ctx context.Context, goCmd, dir string, env []string, tags, format string) (string, error) {
	args := []string{"list", "-f", format}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list (in %s): %v\n%s", dir, err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
