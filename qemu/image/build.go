// Package image turns an unmodified Go main package into an ELF image that
// QEMU (amd64) boots bare-metal through the PVH entry.
//
// Build compiles the package with the stock toolchain (GOOS=linux
// GOARCH=amd64 CGO_ENABLED=0) and links the yolk kernel in by an -overlay that
// adds one generated file (a blank import of yolk/kernel) to the package, so
// the package needs no import of ours; a package of another module is built in
// a temporary workspace that uses both modules. Patch then rewrites the Go
// linker's PT_NOTE into the Xen PHYS32_ENTRY note QEMU's PVH loader reads,
// and changes no other byte of the image but that note's headers.
//
// The package runs on the host only. It does not check that the kernel boots;
// qemu.Run does.
package image

import (
	"bytes"
	"context"
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

// overlayFile is the name of the generated file added to the main package.
const overlayFile = "zz_yolk_link_gen.go"

// Options control Build. The zero value builds with the defaults.
type Options struct {
	Output      string    // image path; default "<package dir name>.elf" in the working directory
	Tags        string    // -tags for go build
	LDFlags     string    // -ldflags for go build
	LinkPackage string    // package imported by the overlay; default DefaultLinkPackage; "-" for none
	Entry       []string  // PVH entry symbols tried in order; default DefaultEntrySymbol
	NoPatch     bool      // build only, leave the PT_NOTE alone
	Go          string    // go command; default "go"
	Stderr      io.Writer // go build's diagnostics; default os.Stderr
}

// Result describes a built image.
type Result struct {
	Output  string     // path of the image
	PkgDir  string     // directory of the main package
	ModRoot string     // root of the package's module
	Patch   *PatchInfo // nil with NoPatch
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
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}

	tmp, err := os.MkdirTemp("", "yolk-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	env := append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	if modRoot != root {
		work, err := writeGoWork(ctx, goCmd, tmp, root, modRoot)
		if err != nil {
			return nil, err
		}
		env = append(env, "GOWORK="+work)
	}

	args := []string{"build", "-o", out}
	if opt.Tags != "" {
		args = append(args, "-tags", opt.Tags)
	}
	if opt.LDFlags != "" {
		args = append(args, "-ldflags", opt.LDFlags)
	}
	link := opt.LinkPackage
	if link == "" {
		link = DefaultLinkPackage
	}
	if link != "-" {
		overlay, err := writeOverlay(tmp, pkgDir, link)
		if err != nil {
			return nil, err
		}
		args = append(args, "-overlay", overlay)
	}
	args = append(args, ".")

	name, err := goList(ctx, goCmd, pkgDir, env, opt.Tags, "{{.Name}}")
	if err != nil {
		return nil, err
	}
	if name != "main" {
		return nil, fmt.Errorf("%s is package %s, not a main package", pkgDir, name)
	}

	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = pkgDir
	cmd.Env = env
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w", strings.Join(args, " "), pkgDir, err)
	}
	res := &Result{Output: out, PkgDir: pkgDir, ModRoot: modRoot}
	if opt.NoPatch {
		return res, nil
	}
	if res.Patch, err = Patch(out, opt.Entry...); err != nil {
		return nil, err
	}
	return res, nil
}

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
// module, and returns its path.
func writeGoWork(ctx context.Context, goCmd, tmp, root, modRoot string) (string, error) {
	v, err := exec.CommandContext(ctx, goCmd, "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	ver := strings.TrimPrefix(strings.TrimSpace(string(v)), "go")
	if i := strings.IndexAny(ver, " -"); i >= 0 { // "1.26.8 X:foo", devel versions
		ver = ver[:i]
	}
	work := fmt.Sprintf("go %s\n\nuse (\n\t%s\n\t%s\n)\n", ver, strconv.Quote(root), strconv.Quote(modRoot))
	path := filepath.Join(tmp, "go.work")
	return path, os.WriteFile(path, []byte(work), 0o644)
}

// writeOverlay writes the generated import file and the -overlay JSON that
// places it in pkgDir, and returns the JSON's path.
func writeOverlay(tmp, pkgDir, link string) (string, error) {
	target := filepath.Join(pkgDir, overlayFile)
	if _, err := os.Stat(target); err == nil {
		return "", fmt.Errorf("%s already exists; yolk build adds a file of that name through -overlay", target)
	}
	src := fmt.Sprintf("// Code generated by yolk build. DO NOT EDIT.\n\npackage main\n\nimport _ %q\n", link)
	gen := filepath.Join(tmp, overlayFile)
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
