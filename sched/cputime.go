package sched

import "sync/atomic"

// CPU time: each task's time on a CPU, counted at every switch from the
// clock the switch reads anyway (the slice's start). Interrupt handlers'
// time counts for the task they interrupted, as on Linux; an idle task's
// time counts for nobody. The kernel's CPU clocks, getrusage and CPU-time
// timers read it. Each task's context switches are counted beside it, as
// Linux's nvcsw and nivcsw (getrusage, /proc's status).

// exited is the CPU time of the tasks that have exited, exitedNV and
// exitedNIV their switches (atomic). While retire moves a task's counts
// there, exitBusy is not 0; exitGen counts the moves: ProcessUsage reads
// again if either says one overlapped its sum (else a thread exiting
// meanwhile would be counted in neither).
var (
	exited              int64
	exitedNV, exitedNIV uint64
	exitBusy            int32
	exitGen             uint32
)

// account makes next the task running on c at the time of the switch's
// clock reading, adding cur's run to its CPU time. The odd acct count
// tells readers on other CPUs that cur's time and c's run start change.
func (c *CPU) account(cur, next *Task) {
	atomic.AddUint32(&c.acct, 1)
	now := c.ranSince
	atomic.AddInt64(&cur.cpuTime, now-atomic.LoadInt64(&c.onSince))
	atomic.StoreInt64(&c.onSince, now)
	c.cur = next.addr()
	atomic.AddUint32(&c.acct, 1)
}

// retire adds the CPU time and switches of t, which has exited, to the
// process's.
func retire(t *Task) {
	atomic.AddInt32(&exitBusy, 1)
	atomic.AddInt64(&exited, atomic.SwapInt64(&t.cpuTime, 0))
	atomic.AddUint64(&exitedNV, atomic.SwapUint64(&t.nvcsw, 0))
	atomic.AddUint64(&exitedNIV, atomic.SwapUint64(&t.nivcsw, 0))
	atomic.AddUint32(&exitGen, 1)
	atomic.AddInt32(&exitBusy, -1)
}

// CPUTime is t's CPU time in ns at now (a clock.Nanotime reading), the
// current run included. t may run on another CPU.
func (t *Task) CPUTime(now int64) int64 {
	if c := This(); c.cur == t.addr() {
		return atomic.LoadInt64(&t.cpuTime) + now - atomic.LoadInt64(&c.onSince)
	}
	for {
		k := atomic.LoadInt32(&t.oncpu)
		if k == 0 {
			ct := atomic.LoadInt64(&t.cpuTime)
			if atomic.LoadInt32(&t.oncpu) == 0 {
				return ct
			}
			continue
		}
		c := &cpus[uint(k-1)%MaxCPUs]
		s := atomic.LoadUint32(&c.acct)
		if s&1 != 0 {
			continue
		}
		ct := atomic.LoadInt64(&t.cpuTime)
		since := atomic.LoadInt64(&c.onSince)
		on := c.cur == t.addr()
		if atomic.LoadUint32(&c.acct) != s {
			continue
		}
		if on && now > since {
			ct += now - since
		}
		return ct
	}
}

// ProcessCPUTime is the CPU time of every task but the idle ones and the
// kernel's own (Task.Kernel), exited tasks included, at now.
func ProcessCPUTime(now int64) int64 {
	ns, _, _ := ProcessUsage(now)
	return ns
}

// ProcessUsage is ProcessCPUTime with the same tasks' voluntary and
// involuntary context switches (getrusage's RUSAGE_SELF).
func ProcessUsage(now int64) (ns int64, nv, niv uint64) {
	for {
		g := atomic.LoadUint32(&exitGen)
		if atomic.LoadInt32(&exitBusy) != 0 {
			continue
		}
		ns, nv, niv = atomic.LoadInt64(&exited), atomic.LoadUint64(&exitedNV), atomic.LoadUint64(&exitedNIV)
		for i := int32(0); i < atomic.LoadInt32(&ntasks); i++ {
			if t := &tasks[i]; t.Alive() && !t.Kernel {
				ns += t.CPUTime(now)
				v, iv := t.Switches()
				nv, niv = nv+v, niv+iv
			}
		}
		if atomic.LoadInt32(&exitBusy) == 0 && atomic.LoadUint32(&exitGen) == g {
			return ns, nv, niv
		}
	}
}

// Switches is t's context switches away so far: voluntary (it blocked)
// and involuntary (preempted, or yielding with work left), as Linux's
// nvcsw and nivcsw. t may run on another CPU.
func (t *Task) Switches() (voluntary, involuntary uint64) {
	return atomic.LoadUint64(&t.nvcsw), atomic.LoadUint64(&t.nivcsw)
}
