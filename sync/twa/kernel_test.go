package twa

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSpinNoAllocs checks that the kernel-context variant, Lock[Spin],
// allocates nothing. Uncontended, testing.AllocsPerRun must count zero.
//
// Contended, the test goroutine holds the lock while two partner
// goroutines queue behind it — the second one as a long-term waiter in the
// waiting array — and then hands over, many times. AllocsPerRun cannot
// measure that: it runs at GOMAXPROCS=1, and a Spin waiter is never
// preempted (see spinEnv), so the holder would never run again. Nor can a
// process-wide count: with three goroutines spinning, the scheduler
// preempts the test's own loops and now and then starts a thread, which
// allocates on the scheduler's account. So the memory profiler records
// every allocation (MemProfileRate = 1) and the test fails if any was made
// with a function of the lock path on the stack.
func TestSpinNoAllocs(t *testing.T) {
	var l Lock[Spin]
	if n := testing.AllocsPerRun(1000, func() {
		l.Lock()
		l.Unlock()
		if l.TryLock() {
			l.Unlock()
		}
	}); n != 0 {
		t.Errorf("uncontended Lock/Unlock/TryLock: %v allocations per run, want 0", n)
	}

	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	var before, after runtime.MemStats
	const rounds = 50
	spinEnv(t, 3, func(t *testing.T) {
		var (
			round   atomic.Uint32 // partners start a round when it changes
			done    atomic.Uint32 // partners that finished the current round
			stop    atomic.Bool
			partner = func(id uint32) {
				seen := uint32(0)
				for !stop.Load() {
					r := round.Load()
					if r == seen {
						pause()
						continue
					}
					seen = r
					// Partner 0 queues first; partner 1 only once
					// partner 0 has its ticket, so partner 1 is two
					// tickets behind the holder: a long-term waiter.
					for id == 1 && atomic.LoadUint32(&l.ticket)-atomic.LoadUint32(&l.grant) < 2 {
						pause()
					}
					l.Lock()
					l.Unlock()
					done.Add(1)
				}
			}
			ran int
		)
		go partner(0)
		go partner(1)
		defer stop.Store(true)
		runtime.ReadMemStats(&before)
		for range rounds {
			l.Lock()
			done.Store(0)
			round.Add(1)
			for atomic.LoadUint32(&l.ticket)-atomic.LoadUint32(&l.grant) < 3 {
				pause() // until both partners hold tickets
			}
			ran++
			l.Unlock()
			for done.Load() < 2 {
				pause()
			}
		}
		runtime.ReadMemStats(&after)
		if ran != rounds {
			t.Errorf("%d contended rounds ran, want %d", ran, rounds)
		}
	})
	t.Logf("%d contended rounds: %d allocations in the process (scheduler and test included)", rounds, after.Mallocs-before.Mallocs)

	runtime.GC() // publish the profile
	records := make([]runtime.MemProfileRecord, 1024)
	n, ok := runtime.MemProfile(records, true)
	for !ok {
		records = make([]runtime.MemProfileRecord, n+n/2)
		n, ok = runtime.MemProfile(records, true)
	}
	lockPath := regexp.MustCompile(`^yolk/sync/twa\.(\(\*Lock\[.*\]\)\.|Spin\.|waitSlot|pause)`)
	for _, r := range records[:n] {
		frames := runtime.CallersFrames(r.Stack())
		var stack []string
		inLock := false
		for {
			f, more := frames.Next()
			stack = append(stack, f.Function)
			inLock = inLock || lockPath.MatchString(f.Function)
			if !more {
				break
			}
		}
		if inLock {
			t.Errorf("%d allocations in the lock path: %s", r.AllocObjects, strings.Join(stack, " ← "))
		}
	}
}

// TestKernelPathNoRuntimeCalls proves with the compiler's output, not by
// promise, that the kernel-context variant never calls into the Go
// runtime: it builds testdata/kernelpath (a program using Lock[Spin]) for
// amd64 and arm64 without the race detector, disassembles every function
// of this package in it plus the program's nosplit wrappers of Lock,
// Unlock and TryLock, and requires that no CALL leaves this package. That
// rules out allocation, write barriers, stack-growth checks (morestack),
// bounds-check panics, the scheduler and any non-intrinsic atomic. The
// remaining indirect calls are the dictionary calls of a generic function
// to its policy's methods, which for Lock[Spin] are Spin's methods,
// disassembled and checked here too.
func TestKernelPathNoRuntimeCalls(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go tool to build the kernel path with: %v", err)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "kernelpath")
			build := exec.Command(goTool, "build", "-race=false", "-o", bin, "./testdata/kernelpath")
			build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			dis, err := exec.Command(goTool, "tool", "objdump", "-s", `^(yolk/sync/twa\.|main\.(lock|unlock|tryLock)$)`, bin).CombinedOutput()
			if err != nil {
				t.Fatalf("objdump: %v\n%s", err, dis)
			}
			checkNoCallsOut(t, dis)
		})
	}
}

var (
	textRE = regexp.MustCompile(`^TEXT (.+?)\(SB\)`)
	callRE = regexp.MustCompile(`\sCALL (\S+)`)
)

func checkNoCallsOut(t *testing.T, dis []byte) {
	t.Helper()
	const pkg = "yolk/sync/twa."
	seen := map[string]bool{}
	fn := ""
	sc := bufio.NewScanner(bytes.NewReader(dis))
	for sc.Scan() {
		line := sc.Text()
		if m := textRE.FindStringSubmatch(line); m != nil {
			fn = m[1]
			seen[fn] = true
			continue
		}
		m := callRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		target := m[1]
		switch {
		case strings.HasPrefix(target, pkg):
			// A call within the package: its body is checked as well.
		case !strings.Contains(target, "(SB)"):
			// Indirect: a generic function calling its policy.
			if !strings.Contains(fn, "[go.shape.") {
				t.Errorf("%s: indirect call outside generic code: %s", fn, strings.TrimSpace(line))
			}
		default:
			t.Errorf("%s calls out of the package: %s", fn, strings.TrimSpace(line))
		}
	}
	// The check is only as good as the functions it saw.
	for _, want := range []string{
		"main.lock", "main.unlock", "main.tryLock",
		pkg + "(*Lock[go.shape.struct {}]).lock", // Lock inlines to it
		pkg + "(*Lock[go.shape.struct {}]).wait",
		pkg + "Spin.AwaitEqual", pkg + "Spin.AwaitChange",
		pkg + "pause.abi0",
	} {
		if !seen[want] {
			t.Errorf("function %s not found in the disassembly", want)
		}
	}
	if t.Failed() {
		t.Logf("disassembly:\n%s", dis)
	}
}
