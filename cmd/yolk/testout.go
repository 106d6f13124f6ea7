package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"

	"yolk/qemu"
)

// go test's output-file flags (-coverprofile -cpuprofile -memprofile
// -blockprofile -mutexprofile -trace -outputdir -artifacts): the test
// binary writes its files through the host share (qemu.Share, virtio-9p),
// so they are on the host, where go test leaves them, when QEMU exits.
//
// The output directory (-outputdir, default the working directory) is
// shared read-write at guestOutDir and the binary gets
// -test.outputdir=guestOutDir; a profile named by an absolute path
// elsewhere shares its own directory too. -coverprofile is go test's
// mechanism: the binary writes its coverage data to -test.gocoverdir and
// its text profile to -test.coverprofile, both in a temporary host
// directory shared at guestCoverDir, and yolk test merges that profile
// into the named file under the mode line (cmd/go's mergeCoverProfile).
// As go test, the profile flags take one package, and all but -trace
// keep the bootable image as NAME.test for pprof's symbols.

const (
	guestOutDir   = "/yolk/out"   // the output directory in the guest
	guestCoverDir = "/yolk/cover" // the coverage data's temporary directory
)

// profileFlags are the output-file flags limited to one package.
var profileFlags = []string{"cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace"}

// profileFlag is a profile flag that is set ("" if none), for go test's
// one-package rule.
func (c *testConfig) profileFlag() string {
	for _, f := range profileFlags {
		if c.files[f] != "" {
			return f
		}
	}
	return ""
}

// needBinary reports whether the image is kept as NAME.test (go test's
// testNeedBinary: the profiles pprof reads).
func (c *testConfig) needBinary() bool {
	return slices.ContainsFunc(profileFlags[:4], func(f string) bool { return c.files[f] != "" })
}

// outputs prepares one package's output files: the shares the guest
// needs and the test binary's arguments for them. i numbers the package
// (its temporary coverage directory); cover is that directory's host
// path, "" without -coverprofile or gocoverdir (the binary's coverage
// data on the host, for testcover.go's recount).
func (t *tester) outputs(i int, gocoverdir bool) (shares []qemu.Share, args []string, cover string, err error) {
	c := t.c
	guest := map[string]string{} // host directory: guest directory
	share := func(dir, at string, ro bool) string {
		if g, ok := guest[dir]; ok {
			return g
		}
		if at == "" {
			at = fmt.Sprintf("%s%d", guestOutDir, len(shares))
		}
		guest[dir] = at
		shares = append(shares, qemu.Share{HostDir: dir, GuestPath: at, ReadOnly: ro})
		return at
	}
	if c.profileFlag() != "" || c.artifacts {
		// As go test: -test.outputdir is set when a profile or the
		// artifacts ask for it, to go test's output directory.
		args = append(args, "-test.outputdir="+share(t.outDir, guestOutDir, false))
		if c.artifacts {
			args = append(args, "-test.artifacts=true")
		}
	}
	for _, f := range profileFlags {
		name := c.files[f]
		if name == "" {
			continue
		}
		host := t.outPath(name)
		args = append(args, "-test."+f+"="+path.Join(share(filepath.Dir(host), "", false), filepath.Base(host)))
	}
	if c.files["coverprofile"] != "" || gocoverdir {
		cover = filepath.Join(t.tmp, fmt.Sprintf("%d-cover", i))
		if err := os.MkdirAll(filepath.Join(cover, "gocoverdir"), 0o777); err != nil {
			return nil, nil, "", err
		}
		g := share(cover, guestCoverDir, false)
		args = append(args, "-test.gocoverdir="+g+"/gocoverdir")
		if c.files["coverprofile"] != "" {
			args = append(args, "-test.coverprofile="+g+"/_cover_.out")
		}
	}
	if len(shares) > qemu.MaxShares {
		return nil, nil, "", fmt.Errorf("the output files are in more than %d directories (the guest takes at most %d shares): use -outputdir and relative names", qemu.MaxShares, qemu.MaxShares)
	}
	return shares, args, cover, nil
}

// outPath is where an output file named name goes on the host: relative
// names are in the output directory.
func (t *tester) outPath(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(t.outDir, name)
}

// coverProfile is the merged -coverprofile file (cmd/go's coverMerge).
type coverProfile struct {
	mu   sync.Mutex
	f    *os.File
	mode string
}

// createCoverProfile creates -coverprofile's file with its mode line, as
// go test does before any package runs (a package that writes no profile
// leaves it so).
func (t *tester) createCoverProfile() error {
	mode := t.c.coverMode
	if mode == "" {
		mode = "set"
	}
	f, err := os.Create(t.outPath(t.c.files["coverprofile"]))
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "mode: %s\n", mode); err != nil {
		f.Close()
		return err
	}
	t.cover = &coverProfile{f: f, mode: mode}
	return nil
}

// merge appends the blocks of the profile a test binary wrote in dir.
func (p *coverProfile) merge(dir string) error {
	return p.mergeFile(filepath.Join(dir, "_cover_.out"))
}

// mergeFile appends the blocks of the profile in file name.
func (p *coverProfile) mergeFile(name string) error {
	b, err := os.ReadFile(name)
	if err != nil || len(b) == 0 {
		return nil // the test did not write one, which go test allows
	}
	head := "mode: " + p.mode + "\n"
	if !bytes.HasPrefix(b, []byte(head)) {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		return fmt.Errorf("test wrote malformed coverage profile: header %q, expected %q", line, head)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = io.Copy(p.f, bytes.NewReader(b[len(head):]))
	return err
}
