package kernel

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The user-memory rule, made structural (docs/user-memory.md): the kernel
// reaches the program's memory only through kernel/mm's copy routines,
// whose faults the trap handler fixes up. A Go pointer or slice made from
// an address is a load or store no fix-up covers: if the address is the
// program's and its page was unmapped by another thread, or lies past a
// mapped file's end, the machine stops (exit 125) where Linux returns
// EFAULT. Issue 33's finding 3 was seven such handlers that reviews had
// missed.
//
// TestUserMemoryRule type-checks the kernel's packages (userRulePkgs) for
// amd64 and arm64 and finds, in each function, every forge — a place
// that reaches memory at an address other than through a Go pointer the
// compiler made:
//
//   - unsafe.Pointer(x) with x an integer;
//   - (*T)(unsafe.Pointer(p)) where T holds pointers and p points at
//     memory that does not, or p's origin is not seen (the idiom
//     *(*unsafe.Pointer)(unsafe.Pointer(&a)) at[T] uses is both); or
//     where p points at memory holding pointers and T holds none (a
//     slice header seen as integers, an address stored in its Data);
//   - unsafe.Add;
//   - an assembly function (no Go body) given a uintptr or
//     unsafe.Pointer, unless userRuleRegisters says it only loads it
//     into a register: the copy routine CopyUser above all;
//   - a use of a function that returns what a forge made (at[T],
//     bytesAt...): found, not listed by hand, to a fixed
//     point, so a helper that wraps one is one itself.
//
// Every function with a forge must be in userRuleAllowed with its number
// of forges and why they reach kernel memory (or are the copy routine's
// own); an entry may be sealed — what it returns is kernel memory, so its
// callers' uses are not forges. A new forge, such as a handler's
// *at[T](p) of a system-call argument, fails the test, as does an entry
// that no longer matches: a reviewer sees each one in this list with its
// reason instead of looking for it among the handlers.
// TestUserMemoryRuleFinds checks the checker on a package with one forge
// of each kind. YOLK_USERMEM_ROOT runs it on another tree (a module root,
// such as a `git archive HEAD` extract) to show what it finds there.

// userRuleSkip are the directories under kernel/ whose packages are not
// checked: kernel/selftest is the program, not the kernel;
// kernel/internal/envtest is hosted tests' scaffolding. Every other
// package there is, new ones too. The scheduler (yolk/sched) is not: it
// makes pointers of its tasks' and queues' addresses throughout, and its
// one access to the program's memory, a futex word's last check
// (loadCond), is CopyUser.
var userRuleSkip = map[string]bool{
	"kernel/selftest":         true,
	"kernel/internal/envtest": true,
	"kernel/testdata":         true,
}

// userRulePkgs are the packages under kernel/ at root that build for
// linux/arch, less userRuleSkip's.
func userRulePkgs(t *testing.T, root, arch string) []string {
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", arch, false
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, "kernel"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if userRuleSkip[filepath.ToSlash(rel)] {
			return filepath.SkipDir
		}
		if _, err := ctx.ImportDir(path, 0); err == nil {
			pkgs = append(pkgs, "yolk/"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// userRuleRegisters are the assembly functions taking an address that
// only load it into a register (a base, a stack top, a page-table root,
// a TLB entry to drop) and never read or write memory there. Any other
// assembly function given an address — the copy routine CopyUser above
// all, the only code with fault fix-ups (arch/$GOARCH UserFixup) — is a
// forge.
var userRuleRegisters = map[string]bool{
	"yolk/kernel.setFS":        true,
	"yolk/kernel.setTrapStack": true,
	"yolk/arch/amd64.SetCR3":   true,
	"yolk/arch/amd64.SetCR4":   true,
	"yolk/arch/amd64.Invlpg":   true,
	"yolk/arch/arm64.TLBIPage": true,
}

// userRuleCopies are the generic copies of a value: one of a type that
// holds pointers would make them of the program's bytes.
var userRuleCopies = map[string]bool{
	"yolk/kernel/mm.Get": true,
	"yolk/kernel/mm.Put": true,
}

// userRuleAllowed is every function that forges a pointer, keyed by file
// (from the module root) and name, with its count of forges and why.
var userRuleAllowed = map[string]struct {
	n      int
	sealed bool // what it returns is kernel memory whatever its callers pass: their uses are not forges
	why    string
}{
	// The copy routine's wrappers.
	"kernel/mm/usercopy_amd64.go: copyUser": {n: 1, why: "the user copy itself: CopyUser, whose faults UserFixup fixes up"},
	"kernel/mm/usercopy_arm64.go: copyUser": {n: 1, why: "the user copy itself: CopyUser, whose faults UserFixup fixes up"},

	// The address-to-pointer helpers: not sealed, so each use below is
	// listed with its own reason.
	"kernel/regs.go: at":            {n: 2, why: whyPrimitive},
	"kernel/regs.go: bytesAt":       {n: 1, why: whyPrimitive},
	"kernel/mm/mm.go: at":           {n: 2, why: whyPrimitive},
	"kernel/mm/mm.go: bytesAt":      {n: 1, why: whyPrimitive},
	"kernel/share/mmap.go: bytesAt": {n: 1, why: whyPrimitive},
	"kernel/fs/fs.go: mem":          {n: 1, why: whyPrimitive},
	"kernel/fs/fs.go: word":         {n: 1, why: whyPrimitive},
	"kernel/net/net.go: mem":        {n: 1, why: whyPrimitive},
	"kernel/ext4/doc.go: mem":       {n: 1, why: whyPrimitive},
	// noEscape's result is its argument, a Go slice, hidden from escape
	// analysis: what its callers pass is memory they already hold.
	"kernel/userbuf.go: noEscape":      {n: 1, sealed: true, why: whyNoEscape},
	"kernel/userbuf.go: noEscapeP":     {n: 1, sealed: true, why: whyNoEscape},
	"kernel/net/io.go: NoEscape":       {n: 1, sealed: true, why: whyNoEscape},
	"kernel/namei/namei.go: noEscape":  {n: 1, sealed: true, why: whyNoEscape},
	"kernel/namei/namei.go: noEscapeP": {n: 2, sealed: true, why: whyNoEscape},
	"kernel/disk/file.go: noEscapeP":   {n: 2, sealed: true, why: whyNoEscape},

	// The in-memory file system's pages and tables.
	"kernel/fs/data.go: (*FS).block":      {n: 3, why: whyFS},
	"kernel/fs/data.go: (*FS).freeTable":  {n: 1, why: whyFS},
	"kernel/fs/data.go: (*FS).readAt":     {n: 1, why: whyFS},
	"kernel/fs/data.go: (*FS).truncPages": {n: 1, why: whyFS},
	"kernel/fs/data.go: (*FS).truncate":   {n: 2, why: whyFS},
	"kernel/fs/data.go: (*FS).writeAt":    {n: 1, why: whyFS},
	"kernel/fs/dir.go: (*FS).Symlink":     {n: 1, why: whyFS},
	"kernel/fs/mmap.go: (*FS).MapCopy":    {n: 1, why: whyFS},
	"kernel/fs/mmap.go: (*FS).ZeroPast":   {n: 1, why: whyFS},
	"kernel/fs/path.go: (*FS).linkTarget": {n: 1, sealed: true, why: whyFS + "; it returns a symlink's target there"},
	"kernel/fs/pipe.go: (*FS).readPipe":   {n: 1, why: whyFS},
	"kernel/fs/pipe.go: (*FS).writePipe":  {n: 1, why: whyFS},

	// ext4's block cache.
	"kernel/ext4/cache.go: (*FS).data":  {n: 1, sealed: true, why: "a block cache buffer: a page the Env supplied, kernel memory"},
	"kernel/ext4/tx.go: (*FS).undoPage": {n: 1, sealed: true, why: "a call's undo page: a page the Env supplied, kernel memory"},

	// The disks' page cache (mmap.go): pages the Env supplied, and a
	// private mapping's frame through the physical map, kernel memory
	// (the program reaches them through its page tables only).
	"kernel/disk/mmap.go: pageAt":           {n: 1, sealed: true, why: "a page of the disks' page cache or a frame mm gave: kernel memory"},
	"kernel/disk/pagetab.go: (*pageTab).at": {n: 1, sealed: true, why: "an entry of the page cache index's chunk, a page the kernel gave it: kernel memory"},

	// The journal's view of a block the file system journals: Add's
	// caller names its buffer by address (ext4's metadata cache, kernel
	// pages), never the program's memory.
	"kernel/jbd2/write.go: (*Journal).block":     {n: 1, why: whyJournal},
	"kernel/jbd2/write.go: (*Journal).writeData": {n: 1, why: whyJournal},

	// epoll's watches.
	"kernel/epoll/epoll.go: (*Table).pollWatch": {n: 1, why: "a watched file's or socket's sequence word: kernel memory (fileLock held)"},

	// The socket layer's rings.
	"kernel/net/io.go: (*Net).iovIn":   {n: 1, why: whyRing},
	"kernel/net/io.go: (*Net).iovOut":  {n: 1, why: whyRing},
	"kernel/net/net.go: (*sock).get":   {n: 1, why: whyRing},
	"kernel/net/net.go: (*sock).put":   {n: 1, why: whyRing},
	"kernel/net/svc.go: (*sock).txGet": {n: 1, why: whyRing},
	"kernel/net/svc.go: (*sock).txPut": {n: 1, why: whyRing},

	// Page tables, frames, the image's BSS.
	"kernel/mm/bss.go: (Space).BSSSplit":            {n: 1, why: whyTables},
	"kernel/mm/bss.go: (Space).ProtectImage":        {n: 3, why: whyTables},
	"kernel/mm/bss.go: (Space).bssFault":            {n: 1, why: whyTables},
	"kernel/mm/bss.go: (Space).splitIdentity":       {n: 2, why: whyTables},
	"kernel/mm/bss.go: BSSKeep":                     {n: 1, why: "the kernel's own variables in the image's BSS (its callers pass their addresses), read at boot"},
	"kernel/mm/bss.go: BSSReclaim":                  {n: 1, why: whyTables},
	"kernel/mm/bss.go: zeroPage":                    {n: 1, why: "a page of the image's BSS, scanned at boot before the program runs"},
	"kernel/mm/dirty.go: (Space).TakeDirty":         {n: 1, why: whyTables},
	"kernel/mm/frames.go: allocFrame":               {n: 1, why: "the free list, kept in the free frames themselves through the physical map"},
	"kernel/mm/frames.go: AllocFrame":               {n: 1, why: "zeroes the frame it took, through the physical map"},
	"kernel/mm/frames.go: FreeFrame":                {n: 1, why: "the free list, kept in the free frames themselves through the physical map"},
	"kernel/mm/physmap_amd64.go: (Space).PhysInit":  {n: 8, why: whyTables},
	"kernel/mm/physmap_amd64.go: identityPDE":       {n: 2, why: whyTables},
	"kernel/mm/physmap_amd64.go: physMapGiB":        {n: 3, why: whyTables},
	"kernel/mm/physmap_arm64.go: (Space).PhysInit":  {n: 1, why: whyTables},
	"kernel/mm/physmap_arm64.go: identityPDE":       {n: 2, why: whyTables},
	"kernel/mm/physmap_arm64.go: physMapGiB":        {n: 3, why: whyTables},
	"kernel/mm/vm.go: (Space).PageFault":            {n: 1, why: whyTables},
	"kernel/mm/vm.go: (Space).Protect":              {n: 1, why: whyTables},
	"kernel/mm/vm.go: (Space).pruneTables":          {n: 1, why: whyTables},
	"kernel/mm/vm.go: (Space).unback":               {n: 1, why: whyTables},
	"kernel/mm/vm.go: AllocKStack":                  {n: 1, why: whyTables},
	"kernel/mm/vm.go: FrameOf":                      {n: 3, why: whyTables},
	"kernel/mm/vm.go: MapKernel":                    {n: 1, why: whyTables},
	"kernel/mm/vm.go: Readable":                     {n: 1, why: whyTables},
	"kernel/mm/vm.go: mapPage":                      {n: 1, why: whyTables},
	"kernel/mm/vm.go: tableEmpty":                   {n: 1, why: whyTables},
	"kernel/mm/vm.go: walk":                         {n: 1, why: whyTables},
	"kernel/mm/vm_amd64.go: UnmapLow":               {n: 1, why: whyTables},
	"kernel/trampoline_amd64.go: installTrampoline": {n: 2, why: "the application processors' start page (a frame through the physical map) and the kernel's own text it copies"},

	// What the loader left, read at boot.
	"kernel/cmdline.go: initrdOption": {n: 1, why: whyBoot},
	"kernel/cmdline.go: parseCmdline": {n: 1, why: whyBoot},
	"kernel/initrd.go: unpackInitrd":  {n: 1, why: whyBoot},
	"kernel/mmenv.go: imageRO":        {n: 6, why: "the image's own ELF header and program headers"},

	// Kernel stacks, the kernel's FP state, its scheduler's words.
	"kernel/main.go: startInit":           {n: 1, why: "the first task's trap frame, at the top of its kernel stack"},
	"kernel/sys_proc.go: sysClone":        {n: 1, why: "the new task's trap frame, at the top of its kernel stack"},
	"kernel/cpu_amd64.go: probeCPU":       {n: 2, why: "FXSAVE's area in a buffer on this stack"},
	"kernel/cpu_amd64.go: loadTable":      {n: 2, why: "LGDT's and LIDT's operand, a variable on this stack"},
	"kernel/rpi3_arm64.go: piRelease":     {n: 1, why: "a secondary CPU's spin-table slot, through the physical map, at boot"},
	"kernel/signal.go: exitFP":            {n: 3, why: whyFP},
	"kernel/signal_amd64.go: fpIn":        {n: 1, why: whyFP + "; the program's copy comes in through mm.CopyIn"},
	"kernel/signal_amd64.go: signalFrame": {n: 1, why: whyFP + "; the frame goes out through the frame's mm copies"},
	"kernel/signal_arm64.go: signalFrame": {n: 3, why: whyFP + "; the frame goes out through the frame's mm copies"},
	"kernel/sys_yolk.go: sysTaskInfo":     {n: 1, why: "a pipe's sequence word, only when it is the task's condition"},
	"kernel/sys_yolk.go: sysSwitchBench":  {n: 1, why: "the benchmark's partner task, a scheduler Task the kernel made"},
	"kernel/sys_yolk.go: crashKernel":     {n: 1, why: "a store to a kernel-half address nothing maps, on purpose: the crash test's kernel fault"},
	"kernel/trap.go: backtrace":           {n: 2, why: "the fault report of a machine that stops: frame pointers checked with mm.Readable"},
	"kernel/trap_arm64.go: syncException": {n: 1, why: "the kernel's own instruction at a kernel-mode PC (inKernel)"},
	"kernel/trap_amd64.go: printNested":   {n: 1, why: "the trap frames on this CPU's trap stack, in a double fault's report"},

	// The program's buffers handed to the 9P client, which reaches them
	// only through Env.Copy.
	"kernel/sys_mm.go: shareMmap":               {n: 1, why: why9P + " (a share's mmap filling its new mapping)"},
	"kernel/share/mmap.go: (*Shares).WriteBack": {n: 1, why: why9P + " (msync and munmap writing pages back)"},
	"kernel/share.go: shareTransfer":            {n: 1, why: why9P + " (read, write, pread, pwrite)"},
}

const (
	whyPrimitive = "the address-to-pointer conversion itself: every use is a forge, listed"
	whyNoEscape  = "its result is its argument, a Go slice, only hidden from escape analysis"
	whyFS        = "the in-memory file system's pages and block tables: frames through the physical map; it copies to and from kernel buffers only"
	whyRing      = "a socket ring's pages: frames through the physical map; the program's side goes through Env.CopyIn/CopyOut"
	whyTables    = "page-table entries and frames, through the physical map or the boot tables: kernel memory"
	whyBoot      = "the boot command line and initrd the loader left, read at boot before the program runs"
	whyFP        = "the kernel's copy of the FP state (the trap frame's area or a per-task buffer), never the program's memory"
	whyJournal   = "a metadata block the file system journals, named by address (its block cache's kernel pages); the journal reads it to write the log"
	why9P        = "the program's buffer as an address and length for the 9P client, which touches it only through Env.Copy (mm.Copy, fault-safe)"
)

func TestUserMemoryRule(t *testing.T) {
	root := os.Getenv("YOLK_USERMEM_ROOT")
	if root == "" {
		root = ".."
	}
	got := map[string]int{}
	where := map[string][]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		pkgs := userRulePkgs(t, root, arch)
		if len(pkgs) < 6 {
			t.Fatalf("%s: only %q under kernel/", arch, pkgs)
		}
		t.Logf("%s: %s", arch, strings.Join(pkgs, " "))
		for _, s := range userRuleForges(t, root, arch, pkgs) {
			k := s.key
			if _, ok := where[k]; !ok || got[k] < s.count {
				got[k] = s.count
			}
			for _, w := range s.where {
				where[k] = append(where[k], arch+": "+w)
			}
		}
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a, ok := userRuleAllowed[k]
		switch {
		case !ok:
			t.Errorf("%s: %d forge(s) — a pointer made from an address, or an address given to assembly — outside kernel/mm's copy routines; copy through mm.Get/Put/CopyIn/CopyOut, or list it with its reason:\n\t%s",
				k, got[k], strings.Join(dedupe(where[k]), "\n\t"))
		case a.n != got[k]:
			t.Errorf("%s: %d forge(s), listed with %d:\n\t%s", k, got[k], a.n, strings.Join(dedupe(where[k]), "\n\t"))
		case a.why == "":
			t.Errorf("%s: listed without a reason", k)
		}
	}
	for k := range userRuleAllowed {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: listed, but it forges no pointer (any more): drop the entry", k)
		}
	}
}

// TestUserMemoryRuleFinds runs the check on testdata/usermemrule, a
// package with one forge of each kind, so that a check that finds
// nothing cannot pass unseen.
func TestUserMemoryRuleFinds(t *testing.T) {
	want := map[string]int{
		"kernel/probe/probe.go: at":       2, // the *(*unsafe.Pointer)(unsafe.Pointer(&a)) idiom: *uintptr read as a pointer, then a pointer of unknown origin
		"kernel/probe/probe.go: wrap":     1, // a use of at; it returns the slice through a variable
		"kernel/probe/probe.go: integer":  1, // unsafe.Pointer of an integer
		"kernel/probe/probe.go: add":      1, // unsafe.Add
		"kernel/probe/probe.go: handler":  3, // uses of wrap and integer, an address given to assembly
		"kernel/probe/probe.go: (*T).get": 1, // a method's use of at
		"kernel/probe/probe.go: header":   1, // a slice header written as integers
	}
	got := map[string]int{}
	for _, s := range userRuleForges(t, "testdata/usermemrule", "amd64", []string{"yolk/kernel/probe"}) {
		got[s.key] = s.count
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d forges found, want %d", k, got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %d forges found, want none", k, n)
		}
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// userRuleSite is one function's forges on one architecture.
type userRuleSite struct {
	key   string // file: function
	count int
	where []string // line: kind, each
}

// ruleChecker type-checks the module's packages at root from source (so a
// tree other than this one is checked as it is) and the rest from the
// export data go list gives.
type ruleChecker struct {
	root  string
	fset  *token.FileSet
	ctx   build.Context
	sizes types.Sizes
	ext   types.Importer
	pkgs  map[string]*types.Package
	files map[string][]*ast.File
	infos map[string]*types.Info
	asm   map[*types.Func]bool // declared without a Go body
	errs  []error
}

func (c *ruleChecker) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if path != "yolk" && !strings.HasPrefix(path, "yolk/") {
		return c.ext.Import(path)
	}
	if p, ok := c.pkgs[path]; ok {
		return p, nil
	}
	dir := filepath.Join(c.root, strings.TrimPrefix(path, "yolk"))
	bp, err := c.ctx.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(c.fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{
		Types:     map[ast.Expr]types.TypeAndValue{},
		Defs:      map[*ast.Ident]types.Object{},
		Uses:      map[*ast.Ident]types.Object{},
		Instances: map[*ast.Ident]types.Instance{},
	}
	conf := types.Config{Importer: c, Sizes: c.sizes, Error: func(err error) { c.errs = append(c.errs, err) }}
	p, _ := conf.Check(path, c.fset, files, info)
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body == nil {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					c.asm[fn] = true
				}
			}
		}
	}
	c.pkgs[path], c.files[path], c.infos[path] = p, files, info
	return p, nil
}

// userRuleForges lists the functions of pkgs that forge pointers, built
// for linux/arch from the module at root.
func userRuleForges(t *testing.T, root, arch string, pkgs []string) []userRuleSite {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	c := &ruleChecker{
		root:  abs,
		fset:  token.NewFileSet(),
		ctx:   build.Default,
		sizes: types.SizesFor("gc", arch),
		pkgs:  map[string]*types.Package{},
		files: map[string][]*ast.File{},
		infos: map[string]*types.Info{},
		asm:   map[*types.Func]bool{},
	}
	c.ctx.GOOS, c.ctx.GOARCH, c.ctx.CgoEnabled = "linux", arch, false
	exports := goListExports(t, arch)
	c.ext = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, p := range pkgs {
		if _, err := c.Import(p); err != nil {
			t.Fatalf("%s (%s): %v", p, arch, err)
		}
	}
	if len(c.errs) > 0 {
		t.Fatalf("type-checking for %s: %v", arch, c.errs[0])
	}

	// Functions returning forged pointers are found to a fixed point: a
	// function is one if it returns what a forge made (a use of another
	// such function counts), unless its entry is sealed.
	prims := map[*types.Func]bool{}
	var sites []userRuleSite
	for changed := true; changed; {
		changed = false
		sites = sites[:0]
		for _, path := range pkgs {
			info := c.infos[path]
			for _, f := range c.files[path] {
				rel, _ := filepath.Rel(abs, c.fset.File(f.Pos()).Name())
				for _, d := range f.Decls {
					key, fn := rel+": var", (*types.Func)(nil)
					if fd, ok := d.(*ast.FuncDecl); ok {
						key = rel + ": " + funcName(fd)
						fn, _ = info.Defs[fd.Name].(*types.Func)
					}
					s := userRuleSite{key: key}
					ast.Inspect(d, func(n ast.Node) bool {
						if what := c.forge(info, n, prims); what != "" {
							s.where = append(s.where, fmt.Sprintf("line %d: %s", c.fset.Position(n.Pos()).Line, what))
							s.count++
						}
						return true
					})
					if s.count == 0 {
						continue
					}
					sites = append(sites, s)
					fd, _ := d.(*ast.FuncDecl)
					if fn != nil && !prims[fn] && !userRuleAllowed[key].sealed && holdsPointers(fn.Type().(*types.Signature).Results()) && c.returnsForged(info, fd, prims) {
						prims[fn], changed = true, true
					}
				}
			}
		}
	}
	return sites
}

// forge says what kind of forge n is, or "".
func (c *ruleChecker) forge(info *types.Info, n ast.Node, prims map[*types.Func]bool) string {
	switch n := n.(type) {
	case *ast.Ident:
		fn, ok := info.Uses[n].(*types.Func)
		if !ok {
			return ""
		}
		fn = fn.Origin()
		if prims[fn] {
			return "use of " + fn.Name() + ", which returns a forged pointer"
		}
		if inst, ok := info.Instances[n]; ok && userRuleCopies[fn.Pkg().Path()+"."+fn.Name()] {
			for i := range inst.TypeArgs.Len() {
				if a := inst.TypeArgs.At(i); holdsPointers(a) {
					return fn.Name() + " of " + a.String() + ", which holds pointers"
				}
			}
		}
		if c.asm[fn] && takesAddress(fn) && !userRuleRegisters[fn.Pkg().Path()+"."+fn.Name()] {
			return "assembly " + fn.Name() + " given an address"
		}
	case *ast.CallExpr:
		tv, ok := info.Types[n.Fun]
		if ok && tv.IsBuiltin() {
			if id := calleeIdent(n.Fun); id != nil && id.Name == "Add" {
				return "unsafe.Add"
			}
			return ""
		}
		if !ok || !tv.IsType() || len(n.Args) != 1 {
			return ""
		}
		arg := ast.Unparen(n.Args[0])
		at := info.Types[arg].Type
		if isUnsafePointer(tv.Type) {
			if b, ok := at.Underlying().(*types.Basic); ok && b.Info()&types.IsInteger != 0 {
				return "unsafe.Pointer of an integer"
			}
			return ""
		}
		ptr, ok := tv.Type.Underlying().(*types.Pointer)
		if !ok || !isUnsafePointer(at) {
			return ""
		}
		// The memory p points at, if seen: unsafe.Pointer(q) of a typed q.
		var src types.Type
		if inner, ok := arg.(*ast.CallExpr); ok && len(inner.Args) == 1 {
			if sp, ok := info.Types[ast.Unparen(inner.Args[0])].Type.Underlying().(*types.Pointer); ok {
				src = sp.Elem()
			}
		}
		switch {
		case holdsPointers(ptr.Elem()) && (src == nil || !holdsPointers(src)):
			return "memory without pointers read as a pointer"
		case !holdsPointers(ptr.Elem()) && src != nil && holdsPointers(src) && !isTypeParam(src):
			// A slice header or pointer seen as integers: an address
			// stored through it makes a pointer.
			return "a pointer's memory written as integers"
		}
	}
	return ""
}

// returnsForged reports whether fd returns a forged pointer: a result
// that is a forge or holds a variable assigned one (in fd, to a fixed
// point), or a named result so assigned.
func (c *ruleChecker) returnsForged(info *types.Info, fd *ast.FuncDecl, prims map[*types.Func]bool) bool {
	tainted := map[types.Object]bool{}
	obj := func(id *ast.Ident) types.Object {
		if o := info.Defs[id]; o != nil {
			return o
		}
		return info.Uses[id]
	}
	forged := func(e ast.Node) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && tainted[obj(id)] {
				found = true
			}
			if c.forge(info, n, prims) != "" {
				found = true
			}
			return !found
		})
		return found
	}
	taint := func(lhs []ast.Expr, names []*ast.Ident) bool {
		more := false
		for _, e := range lhs {
			if id, ok := ast.Unparen(e).(*ast.Ident); ok {
				names = append(names, id)
			}
		}
		for _, id := range names {
			if o := obj(id); o != nil && !tainted[o] && holdsPointers(o.Type()) {
				tainted[o], more = true, true
			}
		}
		return more
	}
	for more := true; more; {
		more = false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, r := range n.Rhs {
					if forged(r) && taint(n.Lhs, nil) {
						more = true
					}
				}
			case *ast.ValueSpec:
				for _, r := range n.Values {
					if forged(r) && taint(nil, n.Names) {
						more = true
					}
				}
			}
			return true
		})
	}
	if fd.Type.Results != nil {
		for _, f := range fd.Type.Results.List {
			for _, id := range f.Names {
				if tainted[obj(id)] {
					return true
				}
			}
		}
	}
	ret := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				if t := info.TypeOf(r); t != nil && holdsPointers(t) && forged(r) {
					ret = true
				}
			}
		}
		return !ret
	})
	return ret
}

// takesAddress reports whether fn has a parameter that may be an
// address: a uintptr or an unsafe.Pointer.
func takesAddress(fn *types.Func) bool {
	ps := fn.Type().(*types.Signature).Params()
	for i := range ps.Len() {
		if b, ok := ps.At(i).Type().Underlying().(*types.Basic); ok && (b.Kind() == types.Uintptr || b.Kind() == types.UnsafePointer) {
			return true
		}
	}
	return false
}

func calleeIdent(e ast.Expr) *ast.Ident {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e
	case *ast.SelectorExpr:
		return e.Sel
	}
	return nil
}

func isTypeParam(t types.Type) bool {
	_, ok := t.(*types.TypeParam)
	return ok
}

func isUnsafePointer(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.UnsafePointer
}

// holdsPointers reports whether a value of type t holds a pointer the
// collector would follow (or unsafe.Pointer).
func holdsPointers(t types.Type) bool {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return u.Kind() == types.UnsafePointer || u.Kind() == types.String
	case *types.Array:
		return holdsPointers(u.Elem())
	case *types.Struct:
		for i := range u.NumFields() {
			if holdsPointers(u.Field(i).Type()) {
				return true
			}
		}
		return false
	case *types.Tuple:
		for i := range u.Len() {
			if holdsPointers(u.At(i).Type()) {
				return true
			}
		}
		return false
	case *types.TypeParam:
		return true
	}
	return true // pointer, slice, map, chan, func, interface
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	return "(" + star + t.(*ast.Ident).Name + ")." + fd.Name.Name
}

// goListExports maps the import path of every package outside the module
// that the kernel's packages need on linux/arch (all that kernel/...
// imports, in this module) to its export data.
func goListExports(t *testing.T, arch string) map[string]string {
	t.Helper()
	run := func(args ...string) []string {
		cmd := exec.Command("go", args...) // go test puts its own first in PATH
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=")
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
			}
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return strings.Fields(string(out))
	}
	var ext []string
	for _, p := range run("list", "-e", "-deps", "-f", "{{.ImportPath}}", "yolk/kernel/...") {
		if p != "unsafe" && p != "yolk" && !strings.HasPrefix(p, "yolk/") {
			ext = append(ext, p)
		}
	}
	m := map[string]string{}
	for _, l := range run(append([]string{"list", "-export", "-f", "{{.ImportPath}}={{.Export}}"}, ext...)...) {
		p, f, _ := strings.Cut(l, "=")
		m[p] = f
	}
	return m
}
