package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// -coverpkg on a package without test files: go test gives it a
// coverage line ("coverage: 0.0% of statements") and, under
// -coverprofile, its blocks, from the meta-data its build wrote (go tool
// covdata over it). yolk test's own builds are of test binaries, so one
// host build, go test -c -work of those packages with the same coverage
// flags, writes their meta-data.
//
// Not done: go test links into each test binary the list of every
// package -coverpkg selects among all the packages it tests
// (testdeps.CoverSelectedPackages) and gives the binary the others'
// meta-data ("metafiles.txt" in its -test.gocoverdir), so that a binary's
// percentage and profile count packages it does not link in; yolk test
// builds each package's binary alone, whose list holds only what it
// links in.

// coverMeta is the selected packages' meta-data fragments.
type coverMeta struct {
	paths []string          // import paths, sorted
	files map[string]string // import path: fragment on the host
}

// metaFileName is cmd/go's covcmd.MetaFileForPackage.
func metaFileName(importPath string) string {
	return fmt.Sprintf("covmeta.%x", sha256.Sum256([]byte(importPath)))
}

// buildCoverMeta compiles pkgs' packages without test files under the
// coverage flags and keeps the meta-data of those -coverpkg selects in
// dir.
func (t *tester) buildCoverMeta(ctx context.Context, pkgs []listedPackage, dir string) error {
	c := t.c
	var patterns []string
	for _, p := range pkgs {
		if p.Error == nil && len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
			patterns = append(patterns, p.ImportPath)
		}
	}
	if len(patterns) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	env := append(os.Environ(), "GOOS=linux", "GOARCH="+c.arch, "CGO_ENABLED=0")
	var flags []string
	for _, f := range c.buildFlags {
		switch name, _, _ := strings.Cut(f, "="); name {
		case "-tags", "-mod", "-modfile", "-cover", "-covermode", "-coverpkg":
			flags = append(flags, f)
		}
	}
	list := exec.CommandContext(ctx, "go", append(append([]string{"list", "-e", "-deps", "-test", "-f", "{{.ImportPath}}"}, flags...), patterns...)...)
	list.Env = env
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("-coverpkg: go list: %v", err)
	}
	byName := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if p, _, _ := strings.Cut(strings.TrimSpace(l), " "); p != "" {
			byName[metaFileName(p)] = p
		}
	}
	bin := filepath.Join(dir, "bin")
	args := append(append([]string{"test", "-c", "-work", "-o", bin + string(filepath.Separator)}, flags...), patterns...)
	build := exec.CommandContext(ctx, "go", args...)
	build.Env = env
	var errb bytes.Buffer
	build.Stdout, build.Stderr = &errb, &errb
	err = build.Run()
	work := ""
	for _, l := range strings.Split(errb.String(), "\n") {
		if w, ok := strings.CutPrefix(l, "WORK="); ok {
			work = w
		}
	}
	if work != "" {
		defer os.RemoveAll(work)
	}
	os.RemoveAll(bin)
	if err != nil || work == "" {
		return fmt.Errorf("-coverpkg: go test -c: %v\n%s", err, errb.String())
	}
	t.meta = &coverMeta{files: map[string]string{}}
	err = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		pkg, ok := byName[d.Name()]
		if !ok || t.meta.files[pkg] != "" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return err // an empty fragment: a package without functions
		}
		f := filepath.Join(dir, d.Name())
		t.meta.files[pkg] = f
		t.meta.paths = append(t.meta.paths, pkg)
		return os.WriteFile(f, b, 0o666)
	})
	slices.Sort(t.meta.paths)
	return err
}

// noTestCoverage is go test's report for a selected package without test
// files: its coverage line from go tool covdata percent and, under
// -coverprofile, its blocks merged into the profile. It reports false when
// the package has no meta-data (then it has "[no test files]").
func (t *tester) noTestCoverage(ctx context.Context, i int, p listedPackage) (string, bool, error) {
	if t.meta == nil || t.meta.files[p.ImportPath] == "" {
		return "", false, nil
	}
	dir := filepath.Join(t.tmp, fmt.Sprintf("%d-meta", i))
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", false, err
	}
	defer os.RemoveAll(dir)
	b, err := os.ReadFile(t.meta.files[p.ImportPath])
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, metaFileName(p.ImportPath)), b, 0o666)
	}
	if err != nil {
		return "", false, err
	}
	covdata := func(args ...string) ([]byte, error) {
		out, err := exec.CommandContext(ctx, "go", append([]string{"tool", "covdata"}, args...)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go tool covdata %s: %v\n%s", args[0], err, out)
		}
		return out, nil
	}
	line, err := covdata("percent", "-i", dir)
	if err != nil {
		return "", false, err
	}
	if t.cover != nil {
		prof := filepath.Join(dir, "_cover_.out")
		if _, err := covdata("textfmt", "-i", dir, "-o", prof); err != nil {
			return "", false, err
		}
		if err := t.cover.mergeFile(prof); err != nil {
			return "", false, err
		}
	}
	return string(line), true, nil
}
