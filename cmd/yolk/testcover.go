package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// -coverpkg over several packages, as go test reports it. go test
// compiles every tested package that -coverpkg selects with a meta-data
// fragment of its own and lists those fragments in a file
// ("metafiles.txt") that each test binary finds in its -test.gocoverdir:
// a binary's coverage line and profile count the selected packages it
// links in and, with no counts, the listed ones it does not (cfile's
// readAuxMetaFiles), and a selected package without test files gets a
// coverage line from its fragment alone.
//
// yolk test builds each test binary alone, so a binary's own list of
// selected packages (testdeps.CoverSelectedPackages) holds only what it
// links in and it would drop the others even if it read their
// fragments. Instead, one host build, go test -exec=true -work of the
// tested packages with the same flags (it links the host's test binaries
// and runs true in their place, but writes go test's metafiles.txt),
// gives the fragments; the guest writes its coverage data to a host
// share, and the host recounts the binary's coverage line (on its way to
// the output) and its profile with go tool covdata over that data and the
// fragments of the packages the binary does not link in: go test's
// numbers, block for block. Not done: go test's binary keeps only its own
// pods of the directory (by meta-data hash); the recount takes all, so a
// test that runs programs built with -cover with GOCOVERDIR set to it
// would add theirs.

// coverMeta is the meta-data fragments of the tested packages -coverpkg
// selects (go test's metafiles.txt).
type coverMeta struct {
	paths []string          // import paths, sorted
	files map[string]string // import path: fragment on the host
}

// metaFileName is cmd/go's covcmd.MetaFileForPackage.
func metaFileName(importPath string) string {
	return fmt.Sprintf("covmeta.%x", sha256.Sum256([]byte(importPath)))
}

// coverPkgWarning starts go test's warning for a -coverpkg pattern that
// no tested package depends on: each of yolk test's builds, of one
// package, would give it for the patterns that package does not depend
// on; the host build gives it as go test does, over all of them.
const coverPkgWarning = "warning: no packages being tested depend on matches for pattern "

// buildCoverMeta runs go test -exec=true over pkgs with the coverage
// flags, keeps the fragments its metafiles.txt lists in dir and writes
// go test's -coverpkg warnings to stderr.
func (t *tester) buildCoverMeta(ctx context.Context, pkgs []listedPackage, dir string, stderr io.Writer) error {
	c := t.c
	var patterns []string
	for _, p := range pkgs {
		if p.Error == nil {
			patterns = append(patterns, p.ImportPath)
		}
	}
	if len(patterns) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	args := []string{"test", "-work", "-exec=true", "-vet=off", "-count=1"}
	for _, f := range c.buildFlags {
		switch name, _, _ := strings.Cut(f, "="); name {
		case "-tags", "-mod", "-modfile", "-cover", "-covermode", "-coverpkg":
			args = append(args, f)
		}
	}
	build := exec.CommandContext(ctx, "go", append(args, patterns...)...)
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+c.arch, "CGO_ENABLED=0")
	var errb bytes.Buffer
	build.Stderr = &errb // its stdout is the result lines of runs that did nothing
	err := build.Run()
	work := ""
	for _, l := range strings.Split(errb.String(), "\n") {
		if w, ok := strings.CutPrefix(l, "WORK="); ok {
			work = w
		} else if strings.HasPrefix(l, coverPkgWarning) {
			fmt.Fprintln(stderr, l)
		}
	}
	if work == "" {
		return fmt.Errorf("-coverpkg: go test -exec=true: %v\n%s", err, errb.String())
	}
	defer os.RemoveAll(work)
	t.meta = &coverMeta{files: map[string]string{}}
	list := ""
	filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "metafiles.txt" {
			list = p
			return fs.SkipAll
		}
		return nil
	})
	if list == "" {
		// A tested package failed to compile (go test's own
		// builds report it): each binary counts its own packages.
		fmt.Fprintln(stderr, "yolk test: -coverpkg: the host build wrote no metafiles.txt; each package's coverage counts the selected packages its test binary links in")
		return nil
	}
	b, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	var mfc struct{ ImportPaths, MetaFileFragments []string } // internal/coverage.MetaFileCollection
	if err := json.Unmarshal(b, &mfc); err != nil || len(mfc.ImportPaths) != len(mfc.MetaFileFragments) {
		return fmt.Errorf("-coverpkg: %s: %v", list, err)
	}
	for i, pkg := range mfc.ImportPaths {
		b, err := os.ReadFile(mfc.MetaFileFragments[i])
		if err != nil {
			return err
		}
		f := filepath.Join(dir, metaFileName(pkg))
		if err := os.WriteFile(f, b, 0o666); err != nil {
			return err
		}
		t.meta.files[pkg] = f
		t.meta.paths = append(t.meta.paths, pkg)
	}
	slices.Sort(t.meta.paths)
	return nil
}

// covdataTool is go tool covdata's executable (go tool -n), once.
var covdataTool = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "covdata").Output()
	return strings.TrimSpace(string(out)), err
})

// covdata runs go tool covdata (its executable: the recount runs while
// the guest waits on its output).
func covdata(ctx context.Context, args ...string) ([]byte, error) {
	tool, err := covdataTool()
	if err != nil {
		return nil, fmt.Errorf("go tool -n covdata: %v", err)
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool covdata %s: %v\n%s", args[0], err, errb.Bytes())
	}
	return out, nil
}

// copyFragments copies the fragments of pkgs into dir.
func (m *coverMeta) copyFragments(dir string, pkgs []string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	for _, p := range pkgs {
		b, err := os.ReadFile(m.files[p])
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, metaFileName(p)), b, 0o666)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
	defer os.RemoveAll(dir)
	if err := t.meta.copyFragments(dir, []string{p.ImportPath}); err != nil {
		return "", false, err
	}
	line, err := covdata(ctx, "percent", "-i", dir)
	if err != nil {
		return "", false, err
	}
	if t.cover != nil {
		prof := filepath.Join(dir, "_cover_.out")
		if _, err := covdata(ctx, "textfmt", "-i", dir, "-o", prof); err != nil {
			return "", false, err
		}
		if err := t.cover.mergeFile(prof); err != nil {
			return "", false, err
		}
	}
	return string(line), true, nil
}

// recounts reports whether package pkg's test binary is recounted: when
// another tested package is selected (its binary may not link it in).
func (t *tester) recounts(pkg string) bool {
	return t.meta != nil && slices.ContainsFunc(t.meta.paths, func(p string) bool { return p != pkg })
}

// coverRecount recounts one test binary's coverage, which it wrote to
// dir/gocoverdir on the host share.
type coverRecount struct {
	ctx  context.Context
	t    *tester
	dir  string
	prof string // the recounted profile, "" until the coverage line came
	err  error
}

// line is the binary's coverage line (without its line end) as go test's
// binary prints it: over the selected packages it links in and, with no
// counts, the other selected tested packages.
func (r *coverRecount) line(guest string) string {
	if r.prof != "" || r.err != nil {
		return guest // once per binary
	}
	gcd := filepath.Join(r.dir, "gocoverdir")
	out, err := covdata(r.ctx, "pkglist", "-i", gcd)
	if err != nil {
		r.err = err
		return guest
	}
	linked := strings.Fields(string(out))
	var others []string
	for _, p := range r.t.meta.paths {
		if !slices.Contains(linked, p) {
			others = append(others, p)
		}
	}
	in := gcd
	if len(others) > 0 {
		aux := filepath.Join(r.dir, "aux")
		if r.err = r.t.meta.copyFragments(aux, others); r.err != nil {
			return guest
		}
		in += "," + aux
	}
	prof := filepath.Join(r.dir, "recount.out")
	if _, r.err = covdata(r.ctx, "textfmt", "-i", in, "-o", prof); r.err != nil {
		return guest
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		r.err = err
		return guest
	}
	var covered, total uint64
	for _, l := range strings.Split(string(b), "\n")[1:] { // after the mode line
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		n, err1 := strconv.ParseUint(f[1], 10, 64)
		count, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			r.err = fmt.Errorf("recounted coverage profile: %q", l)
			return guest
		}
		total += n
		if count != 0 {
			covered += n
		}
	}
	r.prof = prof
	if total == 0 {
		return "coverage: [no statements]"
	}
	// cformat's EmitPercent with testing's Covered suffix.
	return fmt.Sprintf("coverage: %.1f%% of statements in %s", 100*float64(covered)/float64(total), strings.ReplaceAll(r.t.c.coverPkg, ",", ", "))
}

// coverLineWriter passes the guest's output to w, each line that starts
// with "coverage: " through fix (without its line end). It holds back
// only the start of a line that may still be one.
type coverLineWriter struct {
	w    io.Writer
	fix  func(string) string
	line []byte // the held start of the current line
	mid  bool   // in a line that is not one, until its end
}

const coverPrefix = "coverage: "

func (c *coverLineWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		end := len(b)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			end = i + 1
		}
		chunk, eol := b[:end], b[end-1] == '\n'
		b = b[end:]
		if c.mid {
			if _, err := c.w.Write(chunk); err != nil {
				return 0, err
			}
			c.mid = !eol
			continue
		}
		c.line = append(c.line, chunk...)
		if k := min(len(c.line), len(coverPrefix)); string(c.line[:k]) != coverPrefix[:k] {
			if _, err := c.w.Write(c.line); err != nil {
				return 0, err
			}
			c.line, c.mid = c.line[:0], !eol
			continue
		}
		if eol {
			if err := c.emit(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// emit writes the held line, fixed if it is a coverage line.
func (c *coverLineWriter) emit() error {
	l := string(c.line)
	c.line = c.line[:0]
	if strings.HasPrefix(l, coverPrefix) {
		body := strings.TrimRight(l, "\r\n")
		l = c.fix(body) + l[len(body):]
	}
	_, err := io.WriteString(c.w, l)
	return err
}

// Flush writes an unterminated last line.
func (c *coverLineWriter) Flush() {
	if len(c.line) > 0 {
		c.emit()
	}
}

// dropLines returns b without the lines that start with prefix.
func dropLines(b []byte, prefix string) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte(prefix)) {
			out = append(out, l...)
		}
	}
	return out
}
