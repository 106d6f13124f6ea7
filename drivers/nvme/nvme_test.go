package nvme

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

const diskSectors = 8192 // 4 MiB

// addr is b's address for the driver, which keeps it as a uintptr: b
// must be on the heap (stored here, it escapes), not on a goroutine
// stack that may move while the driver waits.
func addr(b []byte) uintptr {
	escape.Store(&b[0])
	return uintptr(unsafe.Pointer(&b[0]))
}

var escape atomic.Pointer[byte]

// TestOpen: the init sequence (reset of an enabled controller, the admin
// queue's registers before CC.EN, CC's value), what Identify says, and
// one I/O queue pair per CPU.
func TestOpen(t *testing.T) {
	w := newWorld(t, diskSectors, nil)
	w.open(3)
	m := w.m
	if want := []uint32{0, ccIOCQES | ccIOSQES | ccEnable}; fmt.Sprint(m.ccWrites) != fmt.Sprint(want) {
		t.Errorf("CC writes %#x, want %#x (a reset, then the enable)", m.ccWrites, want)
	}
	if got := strings.Join(m.setupOrder, " "); got != "aqa asq acq enable" {
		t.Errorf("setup order %q", got)
	}
	in := w.c.Info()
	if string(in.Serial[:8]) != "YOLK0001" || !strings.HasPrefix(string(in.Model[:]), "yolk model controller") {
		t.Errorf("serial %q model %q", in.Serial, in.Model)
	}
	if in.MDTS != 128<<10 || in.MaxTransfer != DataPages*pageSize || in.MaxDirect != 128<<10 {
		t.Errorf("MDTS %d, max transfer %d, direct %d", in.MDTS, in.MaxTransfer, in.MaxDirect)
	}
	if !in.VWC || in.ONCS != 4 || in.NN != 2 || in.Version != 0x10400 || in.Stride != 8 || in.ReadyTO != 10e9 {
		t.Errorf("info %+v", *in)
	}
	if in.Queues != 3 || m.wantQueues != 3 || !m.sq[3].live || m.sq[4].live {
		t.Errorf("queues %d (asked for %d)", in.Queues, m.wantQueues)
	}
	ns := w.c.Namespaces()
	if len(ns) != 1 || ns[0].ID != 1 || ns[0].BlockSize != 512 || ns[0].Sectors != diskSectors || ns[0].Blocks != diskSectors {
		t.Errorf("namespaces %+v", ns)
	}
}

// TestOpen4K: a namespace formatted with 4096-byte blocks, and a
// controller granting fewer queues than CPUs (shared).
func TestOpen4K(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) { m.lbads, m.nsze, m.grant, m.mdts = 12, diskSectors/8, 2, 0 })
	w.open(4)
	ns := w.c.Namespace(0)
	if ns.BlockSize != 4096 || ns.Sectors != diskSectors || ns.Blocks != diskSectors/8 {
		t.Errorf("namespace %+v", *ns)
	}
	if in := w.c.Info(); in.Queues != 2 || in.MDTS != 0 || in.MaxDirect != (prpEntries+1)*pageSize {
		t.Errorf("info %+v", *in)
	}
	buf := make([]byte, 8192)
	if e := w.c.RW(0, 1, addr(buf), 4096, false); e != EINVAL {
		t.Errorf("misaligned sector: %d, want EINVAL", e)
	}
	if e := w.c.RW(0, 1, addr(buf), 512, false); e != EINVAL {
		t.Errorf("short transfer: %d, want EINVAL", e)
	}
	for cpu := 0; cpu < 4; cpu++ { // every CPU's queue
		if e := w.c.RW(0, 8, addr(buf), 8192, false); e != 0 || !bytes.Equal(buf, w.m.disk[4096:4096+8192]) {
			t.Fatalf("read: %d", e)
		}
	}
}

// TestOpenErrors: controllers Open refuses, each within bounded time.
func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*model)
		want  Error
	}{
		{"no NVM command set", func(m *model) { m.capv &^= 1 << 37 }, ErrNoNVM},
		{"8 KiB pages", func(m *model) { m.capv |= 1 << 48 }, ErrPageSize},
		{"one-entry queues", func(m *model) { m.capv &^= 0xffff }, ErrQueueSize},
		{"never ready", func(m *model) { m.readyAfter, m.capv = -1, m.capv&^(0xff<<24)|1<<24 }, ErrEnableTime}, // CAP.TO 500 ms
		{"fatal at enable", func(m *model) { m.readyAfter = -1; m.csts |= cstsCFS }, ErrFatal},
		{"no namespace", func(m *model) { m.nsze = 0 }, ErrNoNamespace},
		{"ready after a while", func(m *model) { m.readyAfter = 1000 }, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, diskSectors, tc.setup)
			if e := Open(&w.c, tenv{w}, regsBase, w.r, 1); e != tc.want {
				t.Fatalf("Open: %v, want %v", e, tc.want)
			}
			if tc.want != OK && tc.want != ErrNoNVM && tc.want != ErrPageSize && tc.want != ErrQueueSize && w.m.cc&ccEnable != 0 {
				t.Errorf("controller left enabled after %v", tc.want)
			}
		})
	}
}

// TestPRPShapes: transfers of every PRP shape — one page, two pages, a
// list, starting anywhere in a page — through RWPhys into contiguous
// memory and through RW's bounce pages, checked against the disk.
func TestPRPShapes(t *testing.T) {
	w := newWorld(t, diskSectors, nil)
	virt, phys := w.r.contiguous(80)
	w.open(1)
	mem := bytesAt(virt, 80*pageSize)
	for _, tc := range []struct {
		off, n int
		shape  string
	}{
		{0, 512, "1 page"},
		{0, 4096, "1 page"},
		{512, 3584, "1 page, unaligned"},
		{0, 8192, "2 pages"},
		{1024, 4096, "2 pages, unaligned"},
		{4092 - 508, 1024, "2 pages, unaligned"},
		{0, 3 * 4096, "list"},
		{2048, 3 * 4096, "list, unaligned"},
		{0, 128 << 10, "list"},
		{100 * 4, 64 << 10, "list, unaligned"},
		{0, 200 << 10, "list"},              // over MDTS: two commands
		{512, 300 << 10, "list, unaligned"}, // three
	} {
		t.Run(fmt.Sprintf("%d+%d", tc.off, tc.n), func(t *testing.T) {
			clear(w.m.shapes)
			sector := uint64(64)
			// Read into the memory, compare, write something else back.
			clear(mem)
			if e := w.c.RWPhys(0, sector, phys+uint64(tc.off), tc.n, false); e != 0 {
				t.Fatalf("read: %d", e)
			}
			if !bytes.Equal(mem[tc.off:tc.off+tc.n], w.m.disk[sector*512:][:tc.n]) {
				t.Fatal("read: data differ")
			}
			if mem[tc.off+tc.n] != 0 || tc.off > 0 && mem[tc.off-1] != 0 {
				t.Fatal("read: bytes outside the buffer written")
			}
			if w.m.shapes[tc.shape] == 0 {
				t.Errorf("shapes %v, want %q", w.m.shapes, tc.shape)
			}
			for i := range tc.n {
				mem[tc.off+i] = byte(i*13 + tc.n)
			}
			if e := w.c.RWPhys(0, sector, phys+uint64(tc.off), tc.n, true); e != 0 {
				t.Fatalf("write: %d", e)
			}
			if !bytes.Equal(mem[tc.off:tc.off+tc.n], w.m.disk[sector*512:][:tc.n]) {
				t.Fatal("write: data differ")
			}
			// The same through RW's bounce pages.
			buf := make([]byte, tc.n)
			if e := w.c.RW(0, sector, addr(buf), tc.n, false); e != 0 || !bytes.Equal(buf, mem[tc.off:tc.off+tc.n]) {
				t.Fatalf("RW read: %d", e)
			}
			for i := range buf {
				buf[i] ^= 0x5a
			}
			if e := w.c.RW(0, sector+8, addr(buf), tc.n, true); e != 0 || !bytes.Equal(buf, w.m.disk[(sector+8)*512:][:tc.n]) {
				t.Fatalf("RW write: %d", e)
			}
		})
	}
	if e := w.c.RWPhys(0, 0, phys+2, 512, false); e != EINVAL {
		t.Errorf("RWPhys at an odd address: %d, want EINVAL", e)
	}
	if e := w.c.RW(0, diskSectors-1, virt, 1024, false); e != EINVAL {
		t.Errorf("past the end: %d, want EINVAL", e)
	}
	if e := w.c.RW(1, 0, virt, 512, false); e != ENODEV {
		t.Errorf("namespace 1: %d, want ENODEV", e)
	}
}

// TestManyInFlight: 64 goroutines on 2 queues, their commands held by
// the controller and completed in a random order, each writing its own
// sectors and reading them back.
func TestManyInFlight(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) { m.hold = true })
	w.open(2)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sector := uint64(g * 64)
			out, in := make([]byte, 8192+512*(g%8)), make([]byte, 8192+512*(g%8))
			for i := range out {
				out[i] = byte(g + i)
			}
			for round := 0; round < 4; round++ {
				out[0] = byte(round)
				if e := w.c.RW(0, sector, addr(out), len(out), true); e != 0 {
					errs <- fmt.Sprintf("goroutine %d write: %d", g, e)
					return
				}
				if e := w.c.RW(0, sector, addr(in), len(in), false); e != 0 || !bytes.Equal(in, out) {
					errs <- fmt.Sprintf("goroutine %d read: %d, equal %v", g, e, bytes.Equal(in, out))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if w.m.maxInFlight < 8 || w.m.maxInFlight > 2*Slots {
		t.Errorf("at most %d commands in flight", w.m.maxInFlight)
	}
	if w.c.Stats.Timeouts != 0 || w.c.Stats.Stray != 0 {
		t.Errorf("stats %+v", w.c.Stats)
	}
	t.Logf("most in flight %d, stats %+v", w.m.maxInFlight, w.c.Stats)
}

// TestStatusError: a command the controller answers with an error
// status ends in EIO with a line on the console; the next works.
func TestStatusError(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) { m.errLBA[100] = 2<<8 | 0x81 }) // media: unrecovered read error
	w.open(1)
	buf := make([]byte, 4096)
	if e := w.c.RW(0, 100, addr(buf), 512, false); e != EIO {
		t.Fatalf("read: %d, want EIO", e)
	}
	if l := w.logText(); !strings.Contains(l, "nvme0: error status (opcode 2, namespace 1, LBA 100, status type 2 code 129): EIO") {
		t.Errorf("console: %q", l)
	}
	if e := w.c.RW(0, 101, addr(buf), 512, false); e != 0 {
		t.Errorf("next read: %d", e)
	}
}

// TestTimeout: a command the controller never completes ends in EIO
// after the timeout; it is aborted, its slot comes back with the abort,
// and the controller goes on.
func TestTimeout(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) { m.dropLBA[200] = true })
	w.open(1)
	buf := make([]byte, 4096)
	start := w.clock.Load()
	if e := w.c.RW(0, 200, addr(buf), 512, true); e != EIO {
		t.Fatalf("write: %d, want EIO", e)
	}
	if d := w.clock.Load() - start; d < DefaultTimeout || d > DefaultTimeout+abortWait+2*PollEvery {
		t.Errorf("timed out after %d ns (model time)", d)
	}
	if w.m.aborts != 1 || w.c.Stats.Timeouts != 1 || w.c.Stats.Late != 1 || w.c.Failed() {
		t.Errorf("aborts %d, stats %+v, failed %v", w.m.aborts, w.c.Stats, w.c.Failed())
	}
	if l := w.logText(); !strings.Contains(l, "nvme0: no completion within the timeout (opcode 1, namespace 1, LBA 200): EIO") {
		t.Errorf("console: %q", l)
	}
	q := w.c.ioQueue()
	if q.free != 1<<q.slots-1 || q.lost != 0 {
		t.Errorf("slots free %#x lost %#x", q.free, q.lost)
	}
	if e := w.c.RW(0, 201, addr(buf), 512, false); e != 0 {
		t.Errorf("next read: %d", e)
	}
}

// TestTimeoutAbortFails: a timed-out command that its abort does not
// bring back fails the controller: it is disabled, and every request
// after ends in EIO at once.
func TestTimeoutAbortFails(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) { m.dropLBA[200] = true; m.ignoreAbort = true })
	w.open(2)
	buf := make([]byte, 4096)
	if e := w.c.RW(0, 200, addr(buf), 512, false); e != EIO {
		t.Fatalf("read: %d, want EIO", e)
	}
	if !w.c.Failed() || w.m.cc&ccEnable != 0 {
		t.Fatalf("failed %v, CC %#x", w.c.Failed(), w.m.cc)
	}
	if l := w.logText(); !strings.Contains(l, "nvme0: controller failed: an aborted command did not come back") {
		t.Errorf("console: %q", l)
	}
	n := w.c.Stats.Commands
	for _, e := range []Errno{w.c.RW(0, 0, addr(buf), 512, false), w.c.Flush(0), w.c.RWPhys(0, 0, 0, 512, true)} {
		if e != EIO {
			t.Errorf("after the failure: %d, want EIO", e)
		}
	}
	if w.c.Stats.Commands != n {
		t.Errorf("commands sent to a failed controller")
	}
}

// TestFatal: CSTS.CFS while a command is in flight (it sets when the
// command is sent) ends it in EIO (a wait notices it within PollEvery,
// long before its timeout) once the disabled controller's RDY has
// cleared, and every later request.
func TestFatal(t *testing.T) {
	w := newWorld(t, diskSectors, nil)
	w.open(2)
	w.m.mu.Lock()
	w.m.dropLBA[300], w.m.fatalAt, w.m.rdyLinger = true, 1, 50
	w.m.mu.Unlock()
	buf := make([]byte, 512)
	start := w.clock.Load()
	if e := w.c.RW(0, 300, addr(buf), 512, false); e != EIO || !w.c.Failed() || w.c.Stats.Timeouts != 0 {
		t.Errorf("read: %d, failed %v, stats %+v", e, w.c.Failed(), w.c.Stats)
	}
	if d := w.clock.Load() - start; d > 2*PollEvery {
		t.Errorf("noticed after %d ns (model time)", d)
	}
	if w.m.csts&cstsRDY != 0 || w.m.rdyLinger != 0 {
		t.Errorf("returned before the disabled controller's RDY cleared")
	}
	if l := w.logText(); l != "nvme0: controller failed: fatal status (CSTS.CFS); every request now ends in EIO\n" {
		t.Errorf("console: %q", l)
	}
	if e := w.c.RW(0, 0, addr(buf), 512, false); e != EIO {
		t.Errorf("after: %d", e)
	}
}

// TestLostInterrupt: completions without an interrupt are found by the
// wait's poll.
func TestLostInterrupt(t *testing.T) {
	w := newWorld(t, diskSectors, nil)
	w.open(1)
	w.m.mu.Lock()
	w.m.noIRQ = true
	w.m.mu.Unlock()
	buf := make([]byte, 4096)
	if e := w.c.RW(0, 8, addr(buf), 4096, false); e != 0 || !bytes.Equal(buf, w.m.disk[8*512:][:4096]) {
		t.Fatalf("read: %d", e)
	}
	if w.c.Stats.Polled == 0 || w.c.Failed() {
		t.Errorf("stats %+v", w.c.Stats)
	}
}

// TestFlushDiscard: Flush sends a command only with a volatile write
// cache; Discard deallocates where ONCS offers Dataset Management.
func TestFlushDiscard(t *testing.T) {
	w := newWorld(t, diskSectors, nil)
	w.open(1)
	if e := w.c.Flush(0); e != 0 || w.m.flushes != 1 {
		t.Errorf("flush: %d, %d commands", e, w.m.flushes)
	}
	if e := w.c.Discard(0, 16, 8); e != 0 || w.m.dsm != 1 || !bytes.Equal(w.m.disk[16*512:24*512], make([]byte, 8*512)) || w.m.disk[24*512] == 0 && w.m.disk[24*512+1] == 0 {
		t.Errorf("discard: %d, %d commands", e, w.m.dsm)
	}
	if e := w.c.Discard(0, diskSectors-4, 8); e != EINVAL {
		t.Errorf("discard past the end: %d", e)
	}

	w = newWorld(t, diskSectors, func(m *model) { m.vwc, m.oncs = false, 0 })
	w.open(1)
	if e := w.c.Flush(0); e != 0 || w.m.flushes != 0 {
		t.Errorf("flush without a cache: %d, %d commands", e, w.m.flushes)
	}
	if e := w.c.Discard(0, 16, 8); e != EOPNOTSUPP {
		t.Errorf("discard without DSM: %d", e)
	}
}

// TestRWBatch: one RW of Batch*MaxTransfer bytes has Batch commands in
// flight at once (held by the controller until all are sent), and its
// data arrive in order.
func TestRWBatch(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) { m.hold = true })
	w.open(1)
	n := Batch * int(w.c.Info().MaxTransfer)
	buf := make([]byte, n+4096)
	if e := w.c.RW(0, 16, addr(buf), n+4096, false); e != 0 || !bytes.Equal(buf, w.m.disk[16*512:][:n+4096]) {
		t.Fatalf("read: %d", e)
	}
	if w.m.maxInFlight != Batch {
		t.Errorf("at most %d commands in flight, want %d", w.m.maxInFlight, Batch)
	}
}

// TestTimeoutsUnderLoad: 24 goroutines on one queue, some of whose
// commands the controller drops (each then times out, is aborted and
// comes back): those requests end in EIO, the others succeed, and no
// slot is used twice at once (the model checks that no command
// identifier is sent while one with it is in flight).
func TestTimeoutsUnderLoad(t *testing.T) {
	w := newWorld(t, diskSectors, func(m *model) {
		m.hold = true
		for _, lba := range []uint64{64 * 3, 64 * 7, 64 * 11} {
			m.dropLBA[lba] = true
		}
	})
	w.open(1)
	var wg sync.WaitGroup
	res := make([]Errno, 24)
	for g := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for r := 0; r < 3 && res[g] == 0; r++ {
				res[g] = w.c.RW(0, uint64(g*64), addr(buf), len(buf), r%2 == 1)
			}
		}()
	}
	wg.Wait()
	for g, e := range res {
		if want := map[bool]Errno{true: EIO, false: 0}[g == 3 || g == 7 || g == 11]; e != want {
			t.Errorf("goroutine %d: %d, want %d", g, e, want)
		}
	}
	q := w.c.ioQueue()
	if w.c.Failed() || w.c.Stats.Timeouts != 3 || q.free != 1<<q.slots-1 || q.lost|q.abandoned != 0 {
		t.Errorf("failed %v, stats %+v, free %#x lost %#x abandoned %#x", w.c.Failed(), w.c.Stats, q.free, q.lost, q.abandoned)
	}
}
