package kernel_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestFaultPathBSSKept checks kernel/mm's demand-paged BSS rule (bss.go):
// whatever the page-fault path itself touches must be kept by the boot, or
// live in .data/.noptrdata, because a fault there nests inside the frame
// allocator's lock (or its wait, as twa's loadGapHook did: the 4-CPU pc
// boot's double fault, ab4d421).
//
// It disassembles the self-test image of each architecture, walks the
// direct calls and tail jumps from the trap entry (faultRoots) through
// the trap dispatch, mm's PageFault and bssFault, the frame allocator and
// the spin lock's wait, stopping at faultStops (code that runs only when
// the kernel is dying, or only after the BSS fault was resolved, or only
// for another vector), and collects every reference to a symbol of the
// image's .bss or .noptrbss. Each must be in faultKept, which says which
// boot call keeps it, or, for a function that holds the fault path and
// other branches in one body, in faultOtherBranch. A failure names the
// symbol, where it is touched and the chain of calls from the entry.
//
// A generic function's body is compiled once per shape and calls its type
// arguments' methods through a dictionary: a function that references a
// dictionary is taken to call every method of the dictionary's type
// arguments (so twa's wait reaches sched.lockWait's AwaitChange, and mm's
// PageFault its Env's methods, stopped in faultStopPrefixes). What it
// cannot see: calls through func and interface values (twa's loadGapHook,
// nil outside its test; its read is seen), and memory reached through
// pointers rather than by symbol (the per-CPU blocks, found through GS or
// TPIDR, are seen where percpu and sched.cpus are indexed). It checks
// symbols, not pages: a variable kept today only because it shares a page
// with one the boot touches fails, as loadGapHook would have.
//
// Each keep in faultKept is checked too: the function it names must be
// in the image, be called from kmain, and touch the symbol, so removing a
// keep (twa.Prefault's read of loadGapHook, say) fails as well.
//
// It lives in package kernel_test beside TestKernelContextNoAllocNoWriteBarrier
// because it needs the same linked image (kernel/mm alone links no trap
// entry, and its tests run hosted without one), and because the keeps it
// checks against are the boot's, in kernel/main.go.
func TestFaultPathBSSKept(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and disassembles an image")
	}
	used := map[string]bool{} // the entries of faultKept and faultOtherBranch either architecture used
	ok := true
	for _, arch := range []string{"amd64", "arm64"} {
		ok = t.Run(arch, func(t *testing.T) {
			img, dis := disassembledImage(t, arch, "yolk/kernel/selftest")
			checkFaultPathBSS(t, arch, img, dis, used)
		}) && ok
	}
	if !ok {
		return
	}
	for s := range faultKept {
		if !used[s] {
			t.Errorf("faultKept: %s is on neither architecture's fault path: remove it", s)
		}
	}
	for fn := range faultStops {
		if !used["stop "+fn] {
			t.Errorf("faultStops: %s is not called on either architecture's fault path: remove it", fn)
		}
	}
	for _, p := range faultStopPrefixes {
		if !used["stop "+p] {
			t.Errorf("faultStopPrefixes: nothing named %s* is called on either architecture's fault path: remove it", p)
		}
	}
	for k := range faultOtherBranch {
		if !used[k[0]+" "+k[1]] {
			t.Errorf("faultOtherBranch: %s does not reference %s on either architecture's fault path: remove it", k[0], k[1])
		}
	}
}

// faultRoots are where a page fault enters the kernel.
var faultRoots = map[string][]string{
	// The IDT's stubs jump to trapCommon, which calls trap; trap's
	// vector 14 calls PageFault.
	"amd64": {"yolk/kernel.trapCommon", "yolk/kernel.trap"},
	// The vector table branches to trapSave, which calls trap; trap's
	// data and instruction aborts call PageFault.
	"arm64": {"yolk/kernel.vectors", "yolk/kernel.trap"},
}

// faultStops are functions the walk does not enter: not on the fault
// path proper. Each says why.
var faultStops = map[string]string{
	// The kernel is dying (faultStopPrefixes has the runtime's panics).
	"yolk/kernel.fault": "the fault report: the kernel is dying",
	// After PageFault returned, with no lock of the allocator held or
	// waited for: a BSS fault there is an ordinary nested fault.
	"yolk/kernel.signalUser":  "after PageFault: the program's signal for an unbacked fault",
	"yolk/kernel.userFixup":   "after PageFault: a user copy's fixup",
	"yolk/kernel.preemptUser": "after the trap, on the task's kernel stack",
	"yolk/kernel.syscall":     "the system-call entry shares the vector table (arm64)",
	// Other vectors of the one dispatch in trap.
	"yolk/kernel.timerInterrupt":        "the timer vector",
	"yolk/kernel.virtioTrap":            "the devices' vectors",
	"yolk/kernel.conInInterrupt":        "the console's vector",
	"yolk/kernel/mm.ShootdownInterrupt": "the shootdown vector (its state is tlbKeep's)",
	"yolk/kernel.stopHere":              "the stop NMI",
	"yolk/kernel.breakpointTrap":        "INT3 in crash mode",
	"yolk/kernel.irq":                   "arm64's IRQ vector",
	// PageFault's program branch: after the BSS branch returned, holding
	// mmLock, not the frame allocator's lock: a BSS fault there is an
	// ordinary nested fault (bssFault takes only the allocator's lock).
	"runtime.deferreturn":                                "PageFault's program branch: its deferred mmLock.Unlock",
	"yolk/kernel/mm.Space[go.shape.struct {}].fileFault": "PageFault's program branch",
	"yolk/kernel/mm.invalidate":                          "PageFault's program branch",
	"yolk/kernel/mm.pteFaulted":                          "PageFault's program branch",
}

// faultStopPrefixes are families of faultStops. The panics the compiler
// inserts for checks and the stack-growth entry: in kernel context they
// fault on g.m and end in fault's report (kcontext_test.go says how).
var faultStopPrefixes = []string{
	"runtime.panic", "runtime.morestack",
	// mm.Env, reached from mm only through Space's dictionary: on the
	// BSS branch only OOMKill (the program is out of memory and is
	// killed; the kernel does not come back to the fault); FileRef,
	// FileFault and ShootdownIPI are PageFault's program branch, Fatal
	// and OutOfMemory end the kernel.
	"yolk/kernel.mmenv.",
}

// faultKept are the BSS symbols on the fault path and what keeps each:
// by is the function that touches the symbol at boot, after BSSSplit and
// before BSSReclaim (BSSReclaim gives back only pages not accessed since
// the split). The test checks that by is in the image, is reached from
// kmain by direct calls, and references the symbol in its own body (not
// the order of the boot's steps, which kernel/main.go's comments give).
// The explicit keeps (BSSKeep, twa.Prefault, sched.Prefault, mm's
// faultKeep) are not inlined, so that their references stay their own;
// the rest are kept by the boot's ordinary use of them, which is only as
// good as the boot's order: prefer an explicit keep for anything new.
type faultKeep struct{ by, why string }

var faultKept = map[string]faultKeep{
	// Explicit keeps.
	"yolk/kernel.percpu":         {"yolk/kernel.bootDone", "mm.BSSKeep(&percpu[i]) for every CPU"},
	"yolk/sched.cpus":            {"yolk/kernel.bootDone", "mm.BSSKeep(sched.CPUAt(i)) for every CPU"},
	"yolk/sync/twa.waitArray":    {"yolk/sync/twa.Prefault", "reads every page of it (kmain)"},
	"yolk/sync/twa.loadGapHook":  {"yolk/sync/twa.Prefault", "reads it (kmain)"},
	"yolk/sched.online":          {"yolk/sched.Prefault", "reads it (kmain): Idle, its first writer, runs after BSSReclaim"},
	"yolk/sched.lockHalted":      {"yolk/sched.Prefault", "reads it (kmain)"},
	"yolk/kernel/mm.frameLock":   {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.regions":     {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.nregions":    {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.freeList":    {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.framesFree":  {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.physOff":     {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/boot.PageTables":       {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.tableFrames": {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.bssLazyLo":   {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.bssLazyHi":   {"yolk/kernel/mm.faultKeep", "BSSReclaim"},
	"yolk/kernel/mm.bssFaulted":  {"yolk/kernel/mm.faultKeep", "BSSReclaim: the boot never touched it before"},
	// Written or read by the boot's own steps after BSSSplit.
	"yolk/kernel.fsgsbase":       {"yolk/kernel.setupCPU", "amd64: setupCPU(0) reads it (and every trap's and system call's entry)"},
	"yolk/kernel.xsaveOn":        {"yolk/kernel.setupCPU", "amd64: setupCPU(0) reads it (and every trap's entry and the full return)"},
	"yolk/drivers/lapic.apic":    {"yolk/drivers/lapic.Init", "amd64: intcInit's local APIC set-up writes it (the kick of a halted lock waiter sends through it)"},
	"yolk/sched.ncpu":            {"yolk/sched.Init", "writes it"},
	"yolk/sched.wakeVector":      {"yolk/sched.Init", "writes it"},
	"runtime.arm64HasATOMICS":    {"yolk/sync/twa.(*Lock[go.shape.struct {}]).lock", "arm64: every atomic read-modify-write reads it, from the boot's first spin lock after BSSSplit on"},
	"yolk/boot.Board":            {"yolk/kernel.intcInit", "arm64: reads it (onPi)"},
	"yolk/drivers/gic.version":   {"yolk/drivers/gic.Init", "arm64: intcInit's gic.Init writes it"},
	"yolk/drivers/gic.dist":      {"yolk/drivers/gic.Init", "arm64: intcInit's gic.Init writes it"},
	"yolk/drivers/gic.cpuif":     {"yolk/drivers/gic.Init", "arm64: intcInit's gic.Init writes it"},
	"yolk/drivers/bcm2836.local": {"yolk/kernel.intcInit", "arm64: read only on the Raspberry Pi 3, where intcInit writes it (bcm2836.Init, inlined)"},
}

// faultOtherBranch are references from a function that holds the fault
// path and other branches in one body, made only on another branch.
var faultOtherBranch = map[[2]string]string{
	{"yolk/kernel.trap", "yolk/kernel.crashMode"}:          "amd64: vector 3 only",
	{"yolk/kernel.trap", "yolk/kernel.stopping"}:           "amd64: the NMI vector only",
	{"yolk/kernel.trap", "yolk/sched.tasks"}:               "after the switch, for a trap from the program (signalPending(sched.Current()), a nested fault there is ordinary)",
	{"yolk/kernel.trap", "yolk/kernel.sigs"}:               "arm64: after the dispatch, for a trap from the program (the signal check)",
	{"yolk/kernel.syncException", "yolk/kernel.crashMode"}: "arm64: BRK only",
	{"yolk/sched.assertKernel", "yolk/sched.dieWhy"}:       "the assertion failed: the kernel is dying",
	{"yolk/sched.(*TWALock).Lock", "yolk/sched.dieWhy"}:    "its interrupts-off assertion failed: the kernel is dying",
	// PageFault's program branch: after the BSS branch returned, with
	// mmLock held, not the allocator's lock; a BSS fault there is an
	// ordinary nested fault (bssFault takes only the allocator's lock).
	{"yolk/kernel/mm.Space[go.shape.struct {}].PageFault", "yolk/kernel/mm.mmLock"}:      "the program branch",
	{"yolk/kernel/mm.Space[go.shape.struct {}].PageFault", "yolk/kernel/mm.vmas"}:        "the program branch",
	{"yolk/kernel/mm.Space[go.shape.struct {}].PageFault", "yolk/kernel/mm.nvmas"}:       "the program branch",
	{"yolk/kernel/mm.Space[go.shape.struct {}].PageFault", "yolk/kernel/mm.pagesMapped"}: "the program branch",
	{"yolk/kernel/mm.Space[go.shape.struct {}].PageFault", "yolk/kernel/mm.imageLo"}:     "not a BSS fault: the image's read-only pages",
	{"yolk/kernel/mm.Space[go.shape.struct {}].PageFault", "yolk/kernel/mm.imageHi"}:     "not a BSS fault: the image's read-only pages",
	// Addresses compared, not memory read.
	{"yolk/kernel.inKernel", "yolk/kernel.bootTLS"}: "amd64: compares FS with its address",
	{"yolk/kernel.inKernel", "yolk/kernel.bootG"}:   "arm64: compares g with its address",
}

type faultFn struct {
	calls []string   // direct call and tail-jump targets, in order
	refs  []faultRef // references to BSS symbols
	dicts []string   // generic dictionaries it references (..dict. symbols)
}

type faultRef struct {
	sym string
	pos string // file:line of the instruction
}

func checkFaultPathBSS(t *testing.T, arch, img string, dis []byte, used map[string]bool) {
	f, err := elf.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var bssSecs []*elf.Section
	for _, name := range []string{".bss", ".noptrbss"} {
		if s := f.Section(name); s != nil {
			bssSecs = append(bssSecs, s)
		}
	}
	if len(bssSecs) == 0 {
		t.Fatal("no .bss or .noptrbss section")
	}
	inBSS := func(a uint64) bool {
		for _, s := range bssSecs {
			if a >= s.Addr && a < s.Addr+s.Size {
				return true
			}
		}
		return false
	}
	bssByName := map[string]bool{}
	var bssSyms []elf.Symbol // sorted by address, for arm64's computed addresses
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && inBSS(s.Value) {
			bssByName[s.Name] = true
			bssSyms = append(bssSyms, s)
		}
	}
	sort.Slice(bssSyms, func(i, j int) bool { return bssSyms[i].Value < bssSyms[j].Value })
	symAt := func(a uint64) string {
		i := sort.Search(len(bssSyms), func(i int) bool { return bssSyms[i].Value > a }) - 1
		if i >= 0 && a < bssSyms[i].Value+max(bssSyms[i].Size, 1) {
			return bssSyms[i].Name
		}
		return fmt.Sprintf("(bss %#x)", a)
	}

	var dictSyms []elf.Symbol // the generic dictionaries, for arm64's computed addresses
	for _, s := range syms {
		if strings.Contains(s.Name, "..dict.") {
			dictSyms = append(dictSyms, s)
		}
	}
	sort.Slice(dictSyms, func(i, j int) bool { return dictSyms[i].Value < dictSyms[j].Value })
	dictAt := func(a uint64) string {
		i := sort.Search(len(dictSyms), func(i int) bool { return dictSyms[i].Value > a }) - 1
		if i >= 0 && a < dictSyms[i].Value+max(dictSyms[i].Size, 1) {
			return dictSyms[i].Name
		}
		return ""
	}

	fns := parseFaultFns(dis, arch, bssByName, inBSS, symAt, dictAt)
	// A generic function's body is compiled once per shape and calls its
	// type arguments' methods through the dictionary its caller passes
	// (twa.Lock's wait calls lockWait's AwaitChange so; mm.Space's calls
	// its Env's): a function that references a dictionary reaches every
	// method of the dictionary's type arguments.
	methods := map[string][]string{} // type → its methods' functions
	for name := range fns {
		i := strings.LastIndex(name, ".")
		if i < 0 {
			continue
		}
		recv := strings.TrimSuffix(strings.TrimPrefix(name[:i], "("), ")")
		if pkg, typ, ok := strings.Cut(recv, ".(*"); ok {
			recv = pkg + "." + typ
		}
		methods[recv] = append(methods[recv], name)
	}
	for _, fn := range fns {
		for _, d := range fn.dicts {
			_, args, _ := strings.Cut(d, "[")
			args, _, _ = strings.Cut(args, "]")
			for _, a := range strings.Split(args, ",") {
				fn.calls = append(fn.calls, methods[a]...)
			}
		}
	}
	if len(fns) < 1000 {
		t.Fatalf("parsed only %d functions: disassembly format changed?", len(fns))
	}

	// Breadth first, so that each chain reported is a shortest one.
	parent := map[string]string{}
	var queue []string
	for _, r := range faultRoots[arch] {
		if fns[r] == nil {
			t.Fatalf("root %s not in the image", r)
		}
		parent[r] = ""
		queue = append(queue, r)
	}
	stopped := func(fn string) bool {
		if _, ok := faultStops[strings.TrimSuffix(fn, ".abi0")]; ok {
			used["stop "+strings.TrimSuffix(fn, ".abi0")] = true
			return true
		}
		for _, p := range faultStopPrefixes {
			if strings.HasPrefix(fn, p) {
				used["stop "+p] = true
				return true
			}
		}
		return false
	}
	chain := func(fn string) string {
		var c []string
		for ; fn != ""; fn = parent[fn] {
			c = append(c, fn)
		}
		for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
			c[i], c[j] = c[j], c[i]
		}
		return strings.Join(c, " → ")
	}
	type finding struct{ sym, fn, pos string }
	var bad []finding
	seenRef := map[[2]string]bool{}
	usedKept, usedOther := map[string]bool{}, map[[2]string]bool{}
	keptFrom := map[string]faultRef{} // the first function found touching a kept symbol, and where
	walked := 0
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		walked++
		for _, r := range fns[fn].refs {
			k := [2]string{fn, r.sym}
			if seenRef[k] {
				continue
			}
			seenRef[k] = true
			if _, ok := faultKept[r.sym]; ok {
				if !usedKept[r.sym] {
					usedKept[r.sym], keptFrom[r.sym] = true, faultRef{fn, r.pos}
				}
				continue
			}
			if _, ok := faultOtherBranch[k]; ok {
				usedOther[k] = true
				continue
			}
			bad = append(bad, finding{r.sym, fn, r.pos})
		}
		for _, c := range fns[fn].calls {
			if _, ok := parent[c]; ok || stopped(c) || fns[c] == nil {
				continue
			}
			parent[c] = fn
			queue = append(queue, c)
		}
	}
	for _, b := range bad {
		t.Errorf("%s is in the demand-paged BSS and not kept at boot, but the page-fault path touches it (%s):\n\t%s",
			b.sym, b.pos, chain(b.fn))
	}
	if len(bad) > 0 {
		t.Errorf("keep each at boot (mm.BSSKeep in bootDone, or the owner's Prefault/keep call next to twa.Prefault) or move it to .data/.noptrdata, and list it in faultKept with the call that keeps it; or stop the walk before it (faultStops) if that code is not on the fault path")
	}
	for _, need := range []string{"yolk/kernel/mm.Space[go.shape.struct {}].bssFault", "yolk/kernel/mm.AllocFrame", "yolk/sched.lockWait.AwaitChange"} {
		if _, ok := parent[need]; !ok {
			t.Errorf("the walk did not reach %s: roots or stops out of date?", need)
		}
	}
	// Each keep used here: its function is in the image, called from
	// kmain, and references the symbol.
	boot := map[string]bool{"yolk/kernel.kmain": true}
	for queue := []string{"yolk/kernel.kmain"}; len(queue) > 0; queue = queue[1:] {
		if fns[queue[0]] == nil {
			t.Fatalf("%s not in the image", queue[0])
		}
		for _, c := range fns[queue[0]].calls {
			if !boot[c] && fns[c] != nil {
				boot[c] = true
				queue = append(queue, c)
			}
		}
	}
	var kept []string
	for s := range usedKept {
		kept = append(kept, s)
	}
	sort.Strings(kept)
	for _, s := range kept {
		k := faultKept[s]
		switch {
		case fns[k.by] == nil:
			t.Errorf("faultKept says %s keeps %s (%s), but there is no %s in the image", k.by, s, k.why, k.by)
		case !boot[k.by]:
			t.Errorf("faultKept says %s keeps %s (%s), but kmain does not call %s", k.by, s, k.why, k.by)
		case !slices.ContainsFunc(fns[k.by].refs, func(r faultRef) bool { return r.sym == s }):
			t.Errorf("faultKept says %s keeps %s (%s), but %s does not touch %s; the page-fault path does (%s):\n\t%s",
				k.by, s, k.why, k.by, s, keptFrom[s].pos, chain(keptFrom[s].sym))
		}
	}
	for s := range usedKept {
		used[s] = true
	}
	for k := range usedOther {
		used[k[0]+" "+k[1]] = true
	}
	t.Logf("walked %d functions from %v", walked, faultRoots[arch])
	if testing.Verbose() {
		var names []string
		for fn := range parent {
			names = append(names, fn)
		}
		sort.Strings(names)
		t.Logf("the fault path:\n\t%s", strings.Join(names, "\n\t"))
	}
}

// sbOperand matches a symbol operand of Go's disassembly, sym(SB) or
// sym+0x10(SB).
var sbOperand = regexp.MustCompile(`([^\s,$()+]+?)(?:[+-](?:0x)?[0-9a-f]+)?\(SB\)`)

// parseFaultFns reads go tool objdump's output into each function's direct
// calls and its references to BSS symbols: on amd64 the disassembler
// names them (RIP-relative sym(SB)); on arm64 an ADRP and the ADD, load or
// store after it that uses its register form the address.
func parseFaultFns(dis []byte, arch string, bssByName map[string]bool, inBSS func(uint64) bool, symAt, dictAt func(uint64) string) map[string]*faultFn {
	fns := map[string]*faultFn{}
	var cur *faultFn
	var adrpReg = -1
	var adrpPage uint64
	sc := bufio.NewScanner(bytes.NewReader(dis))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "TEXT "); ok {
			name, _, _ := strings.Cut(rest, "(SB)")
			cur = &faultFn{}
			fns[name] = cur
			adrpReg = -1
			continue
		}
		if cur == nil {
			continue
		}
		var fields []string
		for _, s := range strings.Split(line, "\t") {
			if s = strings.TrimSpace(s); s != "" {
				fields = append(fields, s)
			}
		}
		if len(fields) < 4 {
			continue
		}
		pos, insn := fields[0], fields[3]
		op, args, _ := strings.Cut(insn, " ")
		if strings.HasSuffix(args, "(SB)") && (op == "CALL" || op == "JMP" || op == "B" || op == "BL") {
			cur.calls = append(cur.calls, strings.TrimSuffix(args, "(SB)"))
			continue
		}
		switch arch {
		case "amd64":
			for _, m := range sbOperand.FindAllStringSubmatch(args, -1) {
				if bssByName[m[1]] {
					cur.refs = append(cur.refs, faultRef{m[1], pos})
				} else if strings.Contains(m[1], "..dict.") {
					cur.dicts = append(cur.dicts, m[1])
				}
			}
		case "arm64":
			pc, err1 := strconv.ParseUint(strings.TrimPrefix(fields[1], "0x"), 16, 64)
			w, err2 := strconv.ParseUint(fields[2], 16, 32)
			if err1 != nil || err2 != nil {
				adrpReg = -1
				continue
			}
			if w&0x9f000000 == 0x90000000 { // ADRP
				imm := (w>>29)&3 | (w>>5)&0x7ffff<<2
				off := int64(imm<<43) >> 31 // sign-extend 21 bits, times 4096
				adrpReg, adrpPage = int(w&31), pc&^0xfff+uint64(off)
				continue
			}
			if adrpReg >= 0 && int(w>>5&31) == adrpReg {
				a := adrpPage
				switch {
				case w&0x7f800000 == 0x11000000: // ADD (immediate)
					imm := w >> 10 & 0xfff
					if w&(1<<22) != 0 {
						imm <<= 12
					}
					a += imm
				case w&0x3b000000 == 0x39000000: // LDR/STR (unsigned immediate)
					a += (w >> 10 & 0xfff) << (w >> 30)
				}
				if inBSS(a) {
					cur.refs = append(cur.refs, faultRef{symAt(a), pos})
				} else if d := dictAt(a); d != "" {
					cur.dicts = append(cur.dicts, d)
				}
			}
			adrpReg = -1
		}
	}
	return fns
}
