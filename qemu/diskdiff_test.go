package qemu_test

// TestDiskDifferential lives in package qemu_test, not qemu: it boots
// Linux through qemu/linuxref, which imports package qemu.

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
	"yolk/qemu/linuxref"
)

// TestDiskDifferential is issue 30's differential test: the same static
// Linux binary (testdata/diskdiff: a seeded sequence of creates, writes,
// renames, links, symlinks, truncates, fallocates, chmods, mkdirs,
// deletes and fsyncs) runs on yolk (microvm, 2 CPUs) and on Linux
// (Debian's generic kernel through qemu/linuxref, on pc with 2 CPUs: it
// cannot calibrate its TSC on microvm under a loaded TCG), each on its own
// copy of one ext4 image that mkfs.ext4 -d made from a seeded tree,
// mounted at the same path. Then:
//
//   - each call's printed result (the errno, bytes written, sizes, link
//     counts, checksums read back) is the same on both, line by line;
//   - e2fsck -fn finds both images clean;
//   - the trees on the two images, read by debugfs (names, types,
//     modes, owners, sizes, link counts, which names share an inode,
//     file contents, symbolic link targets), are the same. Directory
//     sizes and block counts are logged where they differ, not compared:
//     how a system grows a directory and where it allocates is its own.
//
// Writes through mmap are in: the program's -mmap switch is on unless
// YOLK_DISKDIFF_MMAP=0.
// Slow (two TCG boots and the builds: 1–1.5 minutes at 400 calls on a
// loaded 2-core host): it runs with YOLK_DISKDIFF=1 (make diskdiff), not
// in make test. YOLK_DISKDIFF_SEED, _OPS and _BLOCK (block size, default
// 4096) vary it; the Debian kernel is fetched with apt-get into
// $YOLK_LINUXREF_KERNEL (default out/linuxref/kernel at the module's
// root, make linuxref's); with YOLK_DISKDIFF_OUT both consoles and the
// three images (base, Linux's, yolk's) are written there.
func TestDiskDifferential(t *testing.T) {
	if os.Getenv("YOLK_DISKDIFF") == "" {
		t.Skip("slow (two TCG boots): YOLK_DISKDIFF=1, or make diskdiff")
	}
	for _, tool := range []string{"mkfs.ext4", "e2fsck", "debugfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (Debian's e2fsprogs; make qemu installs it): %v", tool, err)
		}
	}
	qemuBin, err := qemu.FindQEMUFor("amd64")
	if err != nil {
		t.Fatal(err)
	}
	seed := envInt(t, "YOLK_DISKDIFF_SEED", 30)
	ops := envInt(t, "YOLK_DISKDIFF_OPS", 400)
	block := envInt(t, "YOLK_DISKDIFF_BLOCK", 4096)
	ctx := t.Context()
	dir := t.TempDir()

	kdir := os.Getenv("YOLK_LINUXREF_KERNEL")
	if kdir == "" {
		kdir, err = filepath.Abs(filepath.Join("..", "out", "linuxref", "kernel"))
		if err != nil {
			t.Fatal(err)
		}
	}
	k, err := linuxref.FetchKernel(ctx, kdir, linuxref.SharePackage["amd64"])
	if err != nil {
		t.Fatalf("the Linux kernel: %v", err)
	}
	t.Logf("Linux: %s %s", k.Package, k.Version)

	// The two guests' programs.
	const prog = "yolk/qemu/testdata/diskdiff"
	linuxBin, initBin := filepath.Join(dir, "diskdiff-linux"), filepath.Join(dir, "linuxinit")
	for _, b := range [][2]string{{linuxBin, prog}, {initBin, "yolk/qemu/linuxref/cmd/linuxinit"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1])
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	machine := "pc"
	mods, err := linuxref.LoadModules(linuxref.ModulesDir(k.Path), linuxref.DiskModules(machine))
	if err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	writeInitrd(t, initrd, initBin, linuxBin, mods)
	yolkImg := filepath.Join(dir, "diskdiff.elf")
	var log bytes.Buffer
	if _, err := image.Build(ctx, prog, image.Options{Output: yolkImg, Stderr: &log}); err != nil {
		t.Fatalf("building %s: %v\n%s", prog, err, log.String())
	}

	// One seeded image, a copy for each.
	tree := filepath.Join(dir, "tree")
	seedTree(t, tree, seed)
	base := filepath.Join(dir, "base.img")
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-b", strconv.Itoa(block), "-L", "diskdiff", "-d", tree, base, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	linuxImg, yolkDisk := filepath.Join(dir, "linux.img"), filepath.Join(dir, "yolk.img")
	for _, f := range []string{linuxImg, yolkDisk} {
		copyFile(t, base, f)
	}
	const mnt = "/mnt/dd"
	args := []string{mnt, "-seed", strconv.FormatInt(int64(seed), 10), "-ops", strconv.Itoa(ops)}
	if os.Getenv("YOLK_DISKDIFF_MMAP") != "0" {
		args = append(args, "-mmap")
	}

	start := time.Now()
	lc := linuxref.Config{QEMU: qemuBin, Kernel: k.Path, Initrd: initrd, Machine: machine, SMP: 2, Memory: "256M", Quiet: true,
		Args: args, Timeout: 5 * time.Minute, Disks: []qemu.Disk{{File: linuxImg, If: "virtio", GuestPath: mnt}}}
	lr, err := linuxref.Run(ctx, lc)
	if err != nil || lr.ExitStatus != 0 || lr.InitSignal != 0 {
		t.Fatalf("Linux: %v %+v\n%s", err, lr, strings.Join(tail(lr), "\n"))
	}
	linuxTime := time.Since(start)
	linuxLines := ddLines(lr.Lines)

	start = time.Now()
	var serial lockedBuf
	yr, err := qemu.Run(ctx, qemu.Config{QEMU: qemuBin, Image: yolkImg, Machine: "microvm", SMP: 2, Memory: "256M", Accel: "tcg",
		Args: args, Timeout: 5 * time.Minute, Stdout: &serial,
		Disks: []qemu.Disk{{File: yolkDisk, If: "virtio", GuestPath: mnt}}})
	yolkTime := time.Since(start)
	yolkAll := strings.Split(serial.String(), "\n")
	if err != nil || yr.ExitCode != 0 {
		t.Fatalf("yolk: %v %+v\n%s", err, yr, serial.String())
	}
	yolkLines := ddLines(yolkAll)
	if out := os.Getenv("YOLK_DISKDIFF_OUT"); out != "" {
		// Both consoles, for a look at what differed.
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, "linux.log"), []byte(strings.Join(lr.Lines, "\n")+"\n"), 0o644)
		os.WriteFile(filepath.Join(out, "yolk.log"), []byte(serial.String()), 0o644)
		defer func() {
			for _, f := range []string{base, linuxImg, yolkDisk} {
				copyFile(t, f, filepath.Join(out, filepath.Base(f)))
			}
		}()
	}
	t.Logf("Linux (pc:2) %v, yolk (microvm:2) %v, TCG; %d calls, seed %d, %d-byte blocks", linuxTime.Round(time.Second), yolkTime.Round(time.Second), ops, seed, block)
	for _, l := range append(slices.Clip(lr.Lines), yolkAll...) {
		if strings.HasPrefix(l, "dd-end:") || strings.HasPrefix(l, "linuxinit:") {
			t.Log(l)
		}
	}

	// The calls' results, line by line: the random sequence does not
	// depend on them, so after a call that differs the next ones still
	// line up while the trees do.
	if !slices.Contains(linuxLines, "dd: done") || !slices.Contains(yolkLines, "dd: done") {
		t.Errorf("a guest did not finish: Linux %d lines, yolk %d", len(linuxLines), len(yolkLines))
	}
	ndiff := 0
	for i := 0; i < max(len(linuxLines), len(yolkLines)); i++ {
		l, y := at(linuxLines, i), at(yolkLines, i)
		if l != y {
			if ndiff++; ndiff <= 20 {
				t.Errorf("the calls' results differ at line %d:\n  Linux: %s\n  yolk:  %s", i, l, y)
			}
		}
	}
	if ndiff > 0 {
		t.Errorf("%d result lines differ", ndiff)
	}
	// Both images clean.
	for _, img := range []string{linuxImg, yolkDisk} {
		if out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
			t.Errorf("e2fsck -fn %s: %v\n%s", filepath.Base(img), err, out)
		}
	}

	// The trees.
	lt, err := readTree(linuxImg, filepath.Join(dir, "dump-linux"))
	if err != nil {
		t.Fatal(err)
	}
	yt, err := readTree(yolkDisk, filepath.Join(dir, "dump-yolk"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trees: Linux %d names, yolk %d", len(lt.names), len(yt.names))
	if diffs := compareTrees(lt, yt); len(diffs) > 0 {
		for _, d := range diffs[:min(len(diffs), 30)] {
			t.Error(d)
		}
		t.Errorf("%d differences between the trees", len(diffs))
	}
	for _, n := range soft(lt, yt) {
		t.Log(n)
	}
}

func envInt(t *testing.T, key string, def int) int {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, s, err)
	}
	return n
}

func at(l []string, i int) string {
	if i < len(l) {
		return l[i]
	}
	return "(nothing)"
}

func tail(r *linuxref.Result) []string {
	if r == nil {
		return nil
	}
	return r.Lines[max(0, len(r.Lines)-40):]
}

// ddLines picks the program's result lines out of a console.
func ddLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if i := strings.Index(l, "dd: "); i >= 0 {
			out = append(out, strings.TrimRight(l[i:], "\r"))
		}
	}
	return out
}

type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func writeInitrd(t *testing.T, path, initBin, prog string, mods []linuxref.Module) {
	t.Helper()
	ib, err := os.ReadFile(initBin)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := linuxref.WriteInitramfs(&buf, ib, pb, mods); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedTree writes the starting tree: nested directories, files of sizes
// around block boundaries and a few large ones, modes, a hard-linked
// pair, fast and slow symbolic links, and a directory of many names
// (several blocks; with dir_index, mkfs.ext4 -d hashes it).
func seedTree(t *testing.T, dir string, seed int) {
	t.Helper()
	r := rand.New(rand.NewSource(int64(seed)))
	sizes := []int{0, 1, 100, 1023, 1024, 4095, 4096, 4097, 12288, 70000, 300000}
	modes := []os.FileMode{0o644, 0o600, 0o755, 0o640}
	write := func(name string, n int, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		r.Read(b)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	for i, d := range []string{"a", "a/b", "a/b/c", "d", "e/f/g"} {
		for j, n := range sizes {
			if (i+j)%2 == 0 {
				write(fmt.Sprintf("%s/s%d", d, n), n, modes[(i+j)%len(modes)])
			}
		}
	}
	for i := range 150 {
		write(fmt.Sprintf("many/n%03d-%s", i, strings.Repeat("x", r.Intn(40))), r.Intn(300), 0o644)
	}
	write("top", 5000, 0o644)
	write("a/b/keep", 4096, 0o600)
	for _, l := range [][2]string{{"a/b/keep", "a/hard"}, {"top", "e/f/top2"}} {
		if err := os.Link(filepath.Join(dir, l[0]), filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"b/keep", "a/fast"}, {strings.Repeat("../", 30) + "top", "d/slow"}, {"nowhere", "dangling"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
}

// A tree as debugfs reads it from an image.
type tree struct {
	names map[string]uint32 // path -> inode
	nodes map[uint32]*node
}

type node struct {
	mode, uid, gid uint32 // mode with the type bits
	size           int64
	links          int
	blocks         int64
	sized          bool   // stat gave the size
	extents        string // debugfs's list of the blocks (logged, not compared)
	target         string // a symbolic link's
	sum            string // a regular file's contents, hashed
	names          []string
}

// readTree walks img with debugfs: ls -p directory by directory, stat
// each inode, dump each regular file (and slow symbolic link) into tmp.
func readTree(img, tmp string) (*tree, error) {
	tr := &tree{names: map[string]uint32{}, nodes: map[uint32]*node{}}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	level := []string{"/"}
	for len(level) > 0 {
		var cmds []string
		for _, d := range level {
			cmds = append(cmds, "ls -p "+d)
		}
		out, err := debugfs(img, cmds)
		if err != nil {
			return nil, err
		}
		var next []string
		cur := ""
		for _, l := range strings.Split(out, "\n") {
			if d, ok := strings.CutPrefix(l, "debugfs: ls -p "); ok {
				cur = d
				continue
			}
			f := strings.Split(l, "/")
			if len(f) != 8 || f[0] != "" {
				continue
			}
			name := f[5]
			if name == "." || name == ".." || (cur == "/" && name == "lost+found") {
				continue
			}
			ino, _ := strconv.ParseUint(f[1], 10, 32)
			mode, _ := strconv.ParseUint(f[2], 8, 32)
			if ino == 0 {
				continue // an empty entry (a block's first, its name removed): debugfs lists those
			}
			p := filepath.Join(cur, name)
			tr.names[p] = uint32(ino)
			if tr.nodes[uint32(ino)] == nil {
				tr.nodes[uint32(ino)] = &node{mode: uint32(mode)}
			}
			tr.nodes[uint32(ino)].names = append(tr.nodes[uint32(ino)].names, p)
			if mode&0o170000 == 0o040000 {
				next = append(next, p)
			}
		}
		level = next
	}
	var inos []uint32
	for ino := range tr.nodes {
		inos = append(inos, ino)
	}
	slices.Sort(inos)
	var cmds []string
	for _, ino := range inos {
		cmds = append(cmds, fmt.Sprintf("stat <%d>", ino))
	}
	out, err := debugfs(img, cmds)
	if err != nil {
		return nil, err
	}
	var n *node
	extents := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "debugfs: ") {
			extents = false
		}
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "Inode:":
			ino, _ := strconv.ParseUint(f[1], 10, 32)
			n = tr.nodes[uint32(ino)]
		case n == nil:
		case len(f) >= 8 && f[0] == "User:" && f[2] == "Group:" && f[len(f)-2] == "Size:":
			u, _ := strconv.ParseUint(f[1], 10, 32)
			g, _ := strconv.ParseUint(f[3], 10, 32)
			n.uid, n.gid = uint32(u), uint32(g)
			n.size, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
			n.sized = true
		case len(f) >= 4 && f[0] == "Links:":
			n.links, _ = strconv.Atoi(f[1])
			n.blocks, _ = strconv.ParseInt(f[3], 10, 64)
		case l == "EXTENTS:" || l == "BLOCKS:":
			extents = true
		case extents && strings.HasPrefix(l, "("):
			n.extents += l
		case strings.HasPrefix(l, "Fast link dest: "):
			n.target, _ = strconv.Unquote(strings.TrimPrefix(l, "Fast link dest: "))
		}
	}
	for _, ino := range inos {
		if !tr.nodes[ino].sized {
			return nil, fmt.Errorf("debugfs stat <%d> on %s: no size read", ino, img)
		}
	}
	cmds = cmds[:0]
	for _, ino := range inos {
		n := tr.nodes[ino]
		if t := n.mode & 0o170000; t == 0o100000 || (t == 0o120000 && n.target == "") {
			cmds = append(cmds, fmt.Sprintf("dump <%d> %s/%d", ino, tmp, ino))
		}
	}
	if _, err := debugfs(img, cmds); err != nil {
		return nil, err
	}
	for _, ino := range inos {
		n := tr.nodes[ino]
		t := n.mode & 0o170000
		if t != 0o100000 && !(t == 0o120000 && n.target == "") {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("%s/%d", tmp, ino))
		if err != nil {
			return nil, err
		}
		if t == 0o120000 {
			n.target = string(b)
		} else {
			n.sum = fmt.Sprintf("%d bytes, crc %08x", len(b), crc(b))
		}
	}
	return tr, nil
}

func crc(b []byte) uint32 {
	h := uint32(2166136261) // FNV-1a: enough to tell contents apart
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// debugfs runs the commands on img (read-only) and returns its output.
func debugfs(img string, cmds []string) (string, error) {
	if len(cmds) == 0 {
		return "", nil
	}
	f, err := os.CreateTemp("", "debugfs-cmds")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriter(f)
	for _, c := range cmds {
		fmt.Fprintln(w, c)
	}
	w.Flush()
	f.Close()
	cmd := exec.Command("debugfs", "-f", f.Name(), img)
	cmd.Env = append(os.Environ(), "DEBUGFS_PAGER=__none__", "PAGER=__none__")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("debugfs %s: %v\n%s", img, err, errb.String())
	}
	// debugfs echoes each command on stdout; its complaints go to stderr.
	if s := strings.TrimSpace(errb.String()); strings.Contains(s, "\n") || (s != "" && !strings.HasPrefix(s, "debugfs ")) {
		return "", fmt.Errorf("debugfs %s: %s", img, s)
	}
	return out.String(), nil
}

// compareTrees lists the differences between two trees: a name on one
// side only; for a name on both, its inode's type and mode, owner, size
// (not a directory's), link count, contents or target, and the names
// sharing its inode.
func compareTrees(a, b *tree) []string {
	var diffs []string
	var all []string
	for p := range a.names {
		all = append(all, p)
	}
	for p := range b.names {
		if _, ok := a.names[p]; !ok {
			all = append(all, p)
		}
	}
	slices.Sort(all)
	for _, p := range all {
		ai, aok := a.names[p]
		bi, bok := b.names[p]
		if !aok || !bok {
			diffs = append(diffs, fmt.Sprintf("%s: on Linux's image %v, on yolk's %v", p, aok, bok))
			continue
		}
		x, y := a.nodes[ai], b.nodes[bi]
		dir := x.mode&0o170000 == 0o040000
		if x.mode != y.mode || x.uid != y.uid || x.gid != y.gid || (!dir && x.size != y.size) || x.links != y.links ||
			x.target != y.target || x.sum != y.sum || !slices.Equal(sorted(x.names), sorted(y.names)) {
			diffs = append(diffs, fmt.Sprintf("%s:\n  Linux: %s\n  yolk:  %s", p, x, y))
		}
	}
	return diffs
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func (n *node) String() string {
	return fmt.Sprintf("mode %o uid %d gid %d size %d links %d blocks %d target %q %s names %v",
		n.mode, n.uid, n.gid, n.size, n.links, n.blocks, n.target, n.sum, sorted(n.names))
}

// soft lists what may differ between two systems that are both right: a
// directory's size, a file's block count (where each allocates, and when
// it frees a fallocated tail).
func soft(a, b *tree) []string {
	var notes []string
	var all []string
	for p := range a.names {
		all = append(all, p)
	}
	slices.Sort(all)
	for _, p := range all {
		bi, ok := b.names[p]
		if !ok {
			continue
		}
		x, y := a.nodes[a.names[p]], b.nodes[bi]
		if x.mode&0o170000 == 0o040000 && x.size != y.size {
			notes = append(notes, fmt.Sprintf("directory %s: size %d on Linux, %d on yolk", p, x.size, y.size))
		}
		if x.blocks != y.blocks {
			notes = append(notes, fmt.Sprintf("%s: %d 512-byte blocks on Linux, %d on yolk (size %d)\n  Linux: %s\n  yolk:  %s", p, x.blocks, y.blocks, x.size, x.extents, y.extents))
		}
	}
	return notes
}
