package main

import (
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"yolk/kernel/abi"
)

// tests is every self-test, in the order they run: this file's, then the
// other files' by file name.
var tests = []test{
	{"TestBoot", testBoot},
	{"TestArgsEnv", testArgsEnv},
	{"TestStdlib", testStdlib},
	{"TestTestTimeout", testTestTimeout},
	{"TestMemoryReserveCommit", testMemoryReserveCommit},
	{"TestMemoryPartialUnmap", testMemoryPartialUnmap},
	{"TestMemoryDontNeedZeroes", testMemoryDontNeed},
	{"TestMemoryBSSDemandPaged", testBSSDemandPaged},
	{"TestTimerSleepAccuracy", testSleepAccuracy},
	{"TestTimersChannels", testTimersChannels},
	{"TestTimerSlack", testTimerSlack},
	{"TestFutexTimeout", testFutexTimeout},
	{"TestVDSOClock", testVDSO},
	{"TestGoroutines10k", testGoroutines10k},
	{"TestGCUnderPressure", testGC},
	{"TestUnknownSyscallENOSYS", testENOSYS},
	{"TestSchedInvariants", testSchedInvariants},
	{"TestPanicRecover", testPanicRecover},
	{"TestNilDereferencePanics", testNilDeref},
	{"TestCryptoRand", testCryptoRand},

	// cputime.go
	{"TestCPUClocks", testCPUClocks},
	{"TestTimerErrno", testTimerErrno},
	{"TestTimerSignals", testTimerSignals},
	{"TestCPUProfile", testCPUProfile},

	// conin.go
	{"TestConsoleInput", testConsoleInput},

	// fs.go
	{"TestFileSystem", testFileSystem},
	{"TestFileErrno", testFileErrno},
	{"TestPipe", testPipe},
	{"TestPipeEpoll", testPipeEpoll},
	{"TestPipeNetpoll", testPipeNetpoll},
	{"TestPipeBlockingClose", testPipeBlockingClose},
	{"TestCloseStdio", testCloseStdio},
	{"TestFIFO", testFIFO},
	{"TestHardLink", testHardLink},
	{"TestDevNull", testDevNull},
	{"TestBootFiles", testBootFiles},

	// share.go
	{"TestShare", testShare},
	{"TestShareReadOnly", testShareReadOnly},

	// exe.go
	{"TestProcSelfExe", testProcSelfExe},

	// net.go
	{"TestUnixStream", testUnixStream},
	{"TestUnixDatagram", testUnixDatagram},
	{"TestUnixPacket", testUnixPacket},
	{"TestUnixRights", testUnixRights},
	{"TestUnixRightsDropped", testUnixRightsDropped},
	{"TestUnixRightsFault", testUnixRightsFault},
	{"TestAcceptAddrLen", testAcceptAddrLen},

	// inet.go
	{"TestTCPLoopback", testTCPLoopback},
	{"TestTCPBacklog", testTCPBacklog},
	{"TestTCP6", testTCP6},
	{"TestUDPLoopback", testUDPLoopback},
	{"TestHTTPLoopback", testHTTPLoopback},
	{"TestInterfaces", testInterfaces},
	{"TestMulticastAddrs", testMulticastAddrs},
	{"TestTCPChurn", testTCPChurn},

	// nic.go, wire.go
	{"TestNIC", testNIC},
	{"TestNICMalformed", testNICMalformed},
	{"TestDHCP", testDHCP},
	{"TestWireTCPOut", testWireTCPOut},
	{"TestWireUDPOut", testWireUDPOut},
	{"TestWireTCP6Out", testWireTCP6Out},
	{"TestWireTCPIn", testWireTCPIn},

	// fuzz.go, fuzz_block.go, memprot.go, mmap_errno.go, usercopy.go, usercopy_eof.go
	{"TestSyscallFuzz", testSyscallFuzz},
	{"TestPipeReadUnmapSignals", testPipeReadUnmapSignals},
	{"TestTaskInfo", testTaskInfo},
	{"TestMemoryProtection", testMemoryProtection},
	{"TestCopyPartial", testCopyPartial},
	{"TestMemoryHugeLengths", testMemoryHugeLengths},
	{"TestMemoryPageTablesFreed", testMemoryPageTablesFreed},
	{"TestMemoryImageRules", testMemoryImageRules},
	{"TestMemoryFaultCodes", testMemoryFaultCodes},
	{"TestMmapErrnoOrder", testMmapErrnoOrder},
	{"TestMemoryOvercommit", testMemoryOvercommit},
	{"TestUserCopyFault", testUserCopyFault},
	{"TestUserCopyPastEOF", testUserCopyPastEOF},
	{"TestSoak", testSoak},

	// preempt.go
	{"TestPreemptSleepBesideSpinner", testPreemptSleep},
	{"TestPreemptGCBesideSpinner", testPreemptGC},
	{"TestPreemptWokenFirst", testWokenFirst},
	{"TestPreemptSpentBudget", testSpentBudget},
	{"TestSignalFrameRoundTrip", testSignalRoundTrip},
	{"TestSignalNotify", testSignalNotify},
	{"TestStopSignals", testStopSignals},

	// eintr.go
	{"TestEINTR", testEINTR},

	// resolver.go
	{"TestEtcFiles", testEtcFiles},
	{"TestDNSLocal", testDNSLocal},

	// smp.go
	{"TestSMPAllCPUsRun", testAllCPUsRun},
	{"TestSMPSchedInvariants", testSMPSchedInvariants},
	{"TestSMPFutexStress", testFutexStress},
	{"TestSMPFutexTimeoutRace", testFutexTimeoutRace},
	{"TestSMPKernelLocks", testKernelLocks},
	{"TestSMPTLBShootdown", testTLBShootdown},
	{"TestSMPTimeMonotonic", testTimeMonotonic},
	{"TestSMPGCParallel", testGCParallel},
	{"TestSMPIdleWakeup", testIdleWakeup},
}

func stats(t *T) abi.Stats {
	var s abi.Stats
	if _, _, e := syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0); e != 0 {
		t.Fatalf("stats syscall: %v", e)
	}
	return s
}

func testBoot(t *T) {
	if len(os.Args) < 1 || os.Args[0] != "yolk" {
		t.Errorf("os.Args = %q, want argv[0] yolk", os.Args)
	}
	// HOME is / unless given, as Linux gives init.
	if h := os.Getenv("HOME"); h != "/" {
		t.Errorf("HOME=%q, want /", h)
	}
	// The kernel passes GODEBUG as given: asynchronous preemption stays on
	// (the harness sets no GODEBUG).
	if g := os.Getenv("GODEBUG"); strings.Contains(g, "asyncpreemptoff") {
		t.Errorf("GODEBUG=%q: the kernel must leave asynchronous preemption on", g)
	}
	ncpu, _, e := syscall.Syscall(abi.SysNumCPU, 0, 0, 0)
	if e != 0 {
		t.Fatalf("yolk numcpu syscall: %v", e)
	}
	if n := runtime.NumCPU(); n != int(ncpu) {
		t.Errorf("runtime.NumCPU() = %d, kernel brought up %d CPUs", n, ncpu)
	}
	s := stats(t)
	t.Logf("NumCPU=%d RAM=%d MiB free=%d MiB TSC=%d MHz LAPIC=%d MHz", runtime.NumCPU(),
		s.FramesAll*4096>>20, s.FramesFree*4096>>20, s.TSCHz/1e6, s.LAPICHz/1e6)
}

// What TestGuest (qemu/guest_test.go) passes on the kernel command line:
// the environment variable argsEnvKey and, after the self-test's flags,
// one argument; both are values that need quoting on the command line.
const (
	argsEnvKey  = "YOLK_SELFTEST_ENV"
	argsEnvWant = `env value with spaces, "quotes" and \ backslash`
	argsArgWant = `argument with spaces, "quotes" and \ backslash`
)

func testArgsEnv(t *T) {
	v, ok := os.LookupEnv(argsEnvKey)
	if !ok {
		t.Skipf("%s not set: not booted by TestGuest, which passes it with an argument", argsEnvKey)
	}
	if v != argsEnvWant {
		t.Errorf("os.Getenv(%q) = %q, want %q", argsEnvKey, v, argsEnvWant)
	}
	if a := flag.Args(); len(a) != 1 || a[0] != argsArgWant {
		t.Errorf("arguments after the flags = %q (os.Args %q), want [%q]", a, os.Args, argsArgWant)
	}
	if os.Args[len(os.Args)-1] != argsArgWant {
		t.Errorf("os.Args = %q, want %q last", os.Args, argsArgWant)
	}
}

// testStdlib exercises maps, sync, fmt, sort and strings with goroutines.
func testStdlib(t *T) {
	// Maps: insert, delete, iterate many keys.
	const nkeys = 100000
	m := make(map[int]string)
	for i := 0; i < nkeys; i++ {
		m[i] = strconv.Itoa(i)
	}
	for i := 0; i < nkeys; i += 2 {
		delete(m, i)
	}
	if len(m) != nkeys/2 {
		t.Errorf("len(map) = %d after deleting half of %d keys", len(m), nkeys)
	}
	seen := 0
	for k, v := range m {
		if k%2 == 0 || v != strconv.Itoa(k) {
			t.Fatalf("map[%d] = %q after deletes", k, v)
		}
		seen++
	}
	if seen != nkeys/2 {
		t.Errorf("iterated %d keys, want %d", seen, nkeys/2)
	}

	// sync: Mutex, RWMutex, Once, WaitGroup under goroutines.
	const workers, rounds = 64, 1000
	var (
		mu      sync.Mutex
		rw      sync.RWMutex
		once    sync.Once
		wg      sync.WaitGroup
		counter int
		shared  = map[int]int{}
		onces   atomic.Int32
		badRead atomic.Int32
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				once.Do(func() { onces.Add(1) })
				mu.Lock()
				counter++
				mu.Unlock()
				if i%10 == 0 {
					rw.Lock()
					shared[w] = i
					shared[-1]++
					rw.Unlock()
				} else {
					rw.RLock()
					if v, ok := shared[w]; ok && v > i {
						badRead.Add(1)
					}
					rw.RUnlock()
				}
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	if counter != workers*rounds {
		t.Errorf("Mutex-protected counter = %d, want %d", counter, workers*rounds)
	}
	if n := shared[-1]; n != workers*rounds/10 {
		t.Errorf("RWMutex-protected writes = %d, want %d", n, workers*rounds/10)
	}
	if badRead.Load() != 0 {
		t.Errorf("%d reads under RLock saw a value from the future", badRead.Load())
	}
	if onces.Load() != 1 {
		t.Errorf("sync.Once ran %d times", onces.Load())
	}

	// fmt, sort, strings.
	if got := fmt.Sprintf("%d|%5.2f|%q|%x|%v|%+v", -42, 3.14159, "a\"b", []byte{1, 171}, []int{1, 2}, struct{ A int }{7}); got != `-42| 3.14|"a\"b"|01ab|[1 2]|{A:7}` {
		t.Errorf("fmt.Sprintf = %q", got)
	}
	if _, err := fmt.Sscanf("7 x", "%d %s", new(int), new(string)); err != nil {
		t.Errorf("fmt.Sscanf: %v", err)
	}
	xs := make([]int, 10000)
	for i := range xs {
		xs[i] = (i * 7919) % 10007
	}
	sort.Ints(xs)
	if !sort.IntsAreSorted(xs) {
		t.Errorf("sort.Ints left the slice unsorted")
	}
	words := strings.Fields("  the quick  brown fox jumps over the lazy dog ")
	sort.Strings(words)
	if got := strings.Join(words, ","); got != "brown,dog,fox,jumps,lazy,over,quick,the,the" {
		t.Errorf("sorted words = %q", got)
	}
	if got := strings.ToUpper(strings.Repeat("ab", 3)); got != "ABABAB" {
		t.Errorf("strings.ToUpper(Repeat) = %q", got)
	}
	if got := strings.ReplaceAll("a-b-c", "-", "+"); got != "a+b+c" || !strings.HasPrefix(got, "a+") || strings.Index(got, "c") != 4 {
		t.Errorf("strings.ReplaceAll = %q", got)
	}
}

// testTestTimeout runs the runner's watchdog on a test that never ends.
func testTestTimeout(t *T) {
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	r := runTest(test{"hang", func(*T) { <-release }}, 20*time.Millisecond)
	el := time.Since(start)
	if !r.timedOut || r.status != "FAIL" || r.elapsed != "timeout" || !strings.Contains(r.log, "timed out after 20ms") {
		t.Errorf("hung test: %+v, want a FAIL (timeout) result", r)
	}
	if el < 20*time.Millisecond || el > 5*time.Second {
		t.Errorf("watchdog of 20ms fired after %v", el)
	}
	r = runTest(test{"quick", func(t *T) { t.Logf("hi") }}, time.Minute)
	if r.timedOut || r.status != "PASS" || r.log != "    hi\n" {
		t.Errorf("quick test: %+v, want PASS", r)
	}
	r = runTest(test{"skip", func(t *T) { t.Skipf("no") }}, time.Minute)
	if r.status != "SKIP" {
		t.Errorf("skipped test: %+v, want SKIP", r)
	}
}

// testGoroutines10k has 10k ping-pong pairs (20k goroutines) alive at once:
// every pair blocks on a barrier before it plays, so all of them exist
// together, then all are released and must all complete. The test counts
// its own goroutines (other tests' goroutines may still be exiting on
// other CPUs, so runtime.NumGoroutine would not be exact).
func testGoroutines10k(t *T) {
	const n = 10000
	var ready, wg sync.WaitGroup
	var sum, alive atomic.Int64
	release := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(2)
		ready.Add(2)
		ping, pong := make(chan int), make(chan int)
		go func() {
			alive.Add(1)
			defer alive.Add(-1)
			defer wg.Done()
			ready.Done()
			<-release
			for v := range ping {
				pong <- v + 1
			}
			close(pong)
		}()
		go func(i int) {
			alive.Add(1)
			defer alive.Add(-1)
			defer wg.Done()
			ready.Done()
			<-release
			ping <- i
			sum.Add(int64(<-pong))
			close(ping)
		}(i)
	}
	ready.Wait()
	if a := alive.Load(); a != 2*n {
		t.Errorf("%d goroutines alive at the barrier, want %d", a, 2*n)
	}
	t.Logf("%d goroutines alive at once (runtime.NumGoroutine %d)", alive.Load(), runtime.NumGoroutine())
	close(release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("goroutines still running 30s after the release; %d alive", alive.Load())
	}
	if want := int64(n*(n-1)/2 + n); sum.Load() != want {
		t.Errorf("sum = %d, want %d", sum.Load(), want)
	}
}

var sink []byte

// testGC allocates four times the guest's RAM in 1 MiB pieces (at most
// 2 GiB: with more RAM the heap never nears it, and each further GiB
// only repeats some forty collections), sampling the free frames as it
// goes: the collector must keep resident memory bounded (GOMEMLIMIT is
// 3/4 of the RAM free at boot) all along, not only after the final
// runtime.GC.
func testGC(t *T) {
	s := stats(t)
	ram := s.FramesAll * 4096
	var ms runtime.MemStats
	total := int64(0)
	minFree := s.FramesFree
	samples := 0
	for total < min(4*ram, 2<<30) {
		sink = make([]byte, 1<<20)
		sink[0] = 1
		total += 1 << 20
		if total%(8<<20) == 0 {
			f := stats(t).FramesFree
			minFree = min(minFree, f)
			samples++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("allocated %d MiB in total on %d MiB of RAM; HeapSys %d MiB, NumGC %d; least free during the loop %d MiB (%d samples)",
		total>>20, ram>>20, ms.HeapSys>>20, ms.NumGC, minFree*4096>>20, samples)
	if ms.NumGC == 0 {
		t.Errorf("no garbage collection ran")
	}
	// Steady RSS: at least an eighth of RAM stays free throughout.
	if minFree < s.FramesAll/8 {
		t.Errorf("free memory fell to %d MiB of %d MiB during the allocation loop", minFree*4096>>20, ram>>20)
	}
	if after := stats(t); after.FramesFree < s.FramesAll/8 {
		t.Errorf("only %d MiB free after GC", after.FramesFree*4096>>20)
	}
}

// testENOSYS makes an unknown system call twice: both return ENOSYS and
// count, and the kernel logs it once (TestGuest counts the
// "syscall acct (163) not implemented" lines on the console).
func testENOSYS(t *T) {
	before, _, _ := syscall.Syscall(abi.SysUnmapped, 0, 0, 0)
	for i := 0; i < 2; i++ {
		if _, _, e := syscall.Syscall(syscall.SYS_ACCT, 0, 0, 0); e != syscall.ENOSYS {
			t.Errorf("acct() = %v, want ENOSYS", e)
		}
	}
	if after, _, _ := syscall.Syscall(abi.SysUnmapped, 0, 0, 0); after != before+2 {
		t.Errorf("ENOSYS counter %d -> %d, want +2", before, after)
	}
}

func testSchedInvariants(t *T) {
	// Stress the scheduler with blocking goroutines on locked threads, so
	// that tasks block and wake through futexes on the ready queue.
	const workers = 8
	var counter atomic.Int64
	ch := make(chan int)
	wait := goLocked(workers, func(int) {
		for v := range ch {
			counter.Add(int64(v))
		}
	})
	for i := 1; i <= 1000; i++ {
		ch <- i
	}
	close(ch)
	wait()
	if counter.Load() != 500500 {
		t.Errorf("sum %d, want 500500: a task was lost or ran twice", counter.Load())
	}
	s := stats(t)
	t.Logf("tasks=%d queue nodes in use=%d bound=%d", s.Tasks, s.NodesInUse, s.NodeBound)
	if s.NodesInUse > s.NodeBound {
		t.Errorf("queue nodes %d exceed tasks+2 queues+2×CPUs = %d", s.NodesInUse, s.NodeBound)
	}
}

func testPanicRecover(t *T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recover() = %v", r)
		}
	}()
	var m map[string]int
	func() {
		defer func() { recover() }()
		m["x"] = 1 // nil map write panics
	}()
	panic("boom")
}

func testCryptoRand(t *T) {
	a, b := make([]byte, 32), make([]byte, 32)
	rand.Read(a)
	rand.Read(b)
	if string(a) == string(b) {
		t.Errorf("crypto/rand returned the same 32 bytes twice")
	}
}

var nilPtr *int

func testNilDeref(t *T) {
	for i := 0; i < 3; i++ { // more than once: sigreturn must leave a sane state
		func() {
			defer func() {
				r := recover()
				err, ok := r.(runtime.Error)
				if !ok || !strings.Contains(err.Error(), "nil pointer dereference") {
					t.Errorf("recover() = %v, want a nil pointer dereference runtime.Error", r)
				}
			}()
			*nilPtr = 1
		}()
	}
}
