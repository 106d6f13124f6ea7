package main

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"yolk/qemu"
)

// A test binary sees what go test's binary sees on Linux: its package's
// module read-only at its own path, with the package directory as its
// working directory, and GOROOT read-only. On the machines yolk test
// boots (all have virtio) these are host shares (testShares: virtio-9p,
// every file live); the boot archive (writePackageTree) is the fallback
// when the shares would be more than qemu.MaxShares with the output
// files' (profiles in several directories) or a path is too long for a
// share's guest path.

// packageRoot is the directory whose tree a test of p sees: its module's
// root (for a standard package, $GOROOT/src, the std module), or without
// a module the nearest directory with a go.mod, or the package's own.
func packageRoot(p listedPackage, goroot string) string {
	switch {
	case p.Standard && goroot != "":
		return filepath.Join(goroot, "src")
	case p.Module != nil && p.Module.Dir != "":
		return p.Module.Dir
	}
	if r, err := moduleRoot(p.Dir); err == nil {
		return r
	}
	return p.Dir
}

// testShares are the read-only shares of p's module root and GOROOT at
// their host paths; a directory inside another is not shared again (the
// standard library's module is in GOROOT). It returns nil when one of
// them cannot be a share's guest path (over 255 bytes).
func testShares(p listedPackage, goroot string) []qemu.Share {
	dirs := []string{packageRoot(p, goroot)}
	if goroot != "" {
		dirs = append(dirs, goroot)
	}
	var shares []qemu.Share
	for i, d := range dirs {
		d = filepath.Clean(d)
		if len(d) > 255 || d == "/" {
			return nil
		}
		inside := false
		for j, o := range dirs {
			o = filepath.Clean(o)
			if j != i && (strings.HasPrefix(d, o+string(filepath.Separator)) || o == d && j < i) {
				inside = true
			}
		}
		if !inside {
			shares = append(shares, qemu.Share{HostDir: d, GuestPath: filepath.ToSlash(d), ReadOnly: true})
		}
	}
	return shares
}

// The boot archive's budget for a test's files: the kernel's in-memory file
// system holds 4096 inodes (kernel/fs.NumInodes), which the test's own
// files need too, and the archive is copied into guest RAM at boot (under
// TCG about 25 ms a MiB: strings' 13.6 MiB in 1499 entries took the boot
// from 36 to 90-380 ms, at load 10), so a module larger than this is cut,
// the directories nearest the package kept (the standard tests that read
// other directories' files find them within 600 entries and 3.2 MiB:
// path/filepath's $GOROOT/src/unicode is the farthest). The package's own
// tree is always there, whatever its size.
const (
	archiveEntries = 1000
	archiveBytes   = 8 << 20
)

// vcsDirs are skipped: a module's version-control metadata is not its
// files (and may be far larger).
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, ".jj": true}

// writePackageTree writes the boot archive a test binary gets when the
// shares cannot give it its files, so that it sees what it can of what go
// test's binary sees on Linux: the package's module (for a
// standard package, $GOROOT/src, the std module) read-only at its own path
// — the package's directory tree first (all of it), then directories by their distance
// in the tree from the package (testdata directories first at each
// distance, then the smaller ones), up to the archive's budget — and
// $GOROOT/lib. It returns a
// note saying what was left out, "" when nothing was.
func writePackageTree(p listedPackage, goroot, name string) (string, error) {
	t := qemu.NewTree()
	root := packageRoot(p, goroot)
	entries, bytes := 0, int64(0)
	if goroot != "" {
		lib := filepath.Join(goroot, "lib")
		if st, err := os.Stat(lib); err == nil && st.IsDir() {
			if err := t.AddDir(lib, filepath.ToSlash(lib), true); err != nil {
				return "", fmt.Errorf("boot archive of %s: %v", lib, err)
			}
		}
	}
	dirs, err := moduleDirs(root, p.Dir)
	if err != nil {
		return "", fmt.Errorf("boot archive of %s: %v", root, err)
	}
	added := 0
	for _, d := range dirs {
		if !d.inPkg && (entries+d.entries > archiveEntries || bytes+d.bytes > archiveBytes) {
			break
		}
		if err := t.AddDir(d.path, filepath.ToSlash(d.path), false); err != nil {
			return "", fmt.Errorf("boot archive of %s: %v", d.path, err)
		}
		entries += d.entries
		bytes += d.bytes
		added++
	}
	if err := t.WriteFile(name); err != nil {
		return "", err
	}
	if added < len(dirs) {
		var leftFiles int
		var leftBytes int64
		for _, d := range dirs[added:] {
			leftFiles += d.entries
			leftBytes += d.bytes
		}
		return fmt.Sprintf("boot archive of %s: %d directories nearest %s (%d entries, %.1f MiB); %d directories (%d entries, %.1f MiB) left out over the budget of %d entries and %d MiB",
			root, added, p.ImportPath, entries, float64(bytes)/(1<<20), len(dirs)-added, leftFiles, float64(leftBytes)/(1<<20), archiveEntries, archiveBytes>>20), nil
	}
	return "", nil
}

// moduleRoot returns the nearest directory at or above dir with a go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s: no go.mod above it", dir)
		}
	}
}

// A moduleDir is one directory of a module with what its archive entries
// cost: its files and its subdirectories (listed, empty until their own
// turn).
type moduleDir struct {
	path    string
	entries int
	bytes   int64
	inPkg   bool // in the package's own tree
	dist    int  // directories between it and the package's directory
	testdat bool // named testdata
}

// moduleDirs lists the directories of the module at root (not nested
// modules, not version-control metadata) in the order the archive takes
// them: the package directory pkg's own tree by depth, then by distance
// from pkg; at each distance testdata directories first, then the smaller
// ones (so that as many directories as fit are there), then by path.
func moduleDirs(root, pkg string) ([]moduleDir, error) {
	var dirs []moduleDir
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root {
			if vcsDirs[d.Name()] {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		md := moduleDir{path: p, entries: 1, testdat: d.Name() == "testdata"}
		for _, e := range ents {
			md.entries++
			if e.Type().IsRegular() {
				if fi, err := e.Info(); err == nil {
					md.bytes += fi.Size()
				}
			}
		}
		rel, _ := filepath.Rel(pkg, p)
		md.inPkg = rel == "." || !strings.HasPrefix(rel, "..")
		md.dist = treeDistance(pkg, p)
		dirs = append(dirs, md)
		return nil
	})
	slices.SortStableFunc(dirs, func(a, b moduleDir) int {
		if a.inPkg != b.inPkg {
			if a.inPkg {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.dist, b.dist); c != 0 {
			return c
		}
		if a.testdat != b.testdat {
			if a.testdat {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.bytes, b.bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	})
	return dirs, err
}

// treeDistance is the number of steps between directories a and b in the
// directory tree.
func treeDistance(a, b string) int {
	as := strings.Split(filepath.Clean(a), string(filepath.Separator))
	bs := strings.Split(filepath.Clean(b), string(filepath.Separator))
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] {
		n++
	}
	return len(as) - n + len(bs) - n
}
