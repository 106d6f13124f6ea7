package procsnap

import (
	"encoding/binary"

	"yolk/kernel/mm"
	"yolk/kernel/procfs"
	"yolk/sched"
)

// fillProc fills the process's numbers and its threads.
func (st *State[E]) fillProc(s *procfs.Snapshot) {
	p := &s.Proc
	p.PID, p.PPID, p.PGID, p.SID, p.TTY, p.TPGID = 1, 0, 1, 1, 0, -1
	st.comm(&p.Comm)
	p.Umask = st.env.Umask()
	files := st.env.Files()
	p.UID, p.GID, p.Caps, p.FDSize = 0, 0, procfs.CapFull, uint32(files)
	for i := range p.Limits {
		c, m := Rlimit(i, files)
		p.Limits[i] = procfs.Rlimit{Cur: c, Max: m}
	}

	st.threads(s, true)
	p.DeadUserNS, p.DeadSysNS = uint64(sched.ExitedCPUTime()), 0

	p.SigIgnored, p.SigCaught = st.env.SigActions()

	ms := mm.ReadStats()
	a := st.areaSums()
	lo, ro, bss, end := st.env.Image()
	p.StartCode, p.EndCode, p.StartData, p.EndData = uint64(lo), uint64(ro), uint64(ro), uint64(bss)
	p.StartBrk = uint64(mm.PageRound(end))
	p.VmExe = uint64(ro - lo)
	p.VmSize = a.size + uint64(mm.PageRound(end)-lo)
	p.VmData = a.data + uint64(mm.PageRound(end)-ro)
	p.VmStk = a.stack
	p.VmLck, p.VmPin, p.VmLib, p.VmSwap = 0, 0, 0, 0
	p.VmPTE = uint64(ms.TableFrames) * mm.PageSize
	p.RssFile = uint64(ro - lo)
	p.RssAnon = uint64(ms.PagesMapped)*mm.PageSize + uint64(mm.PageRound(end)-ro)
	if untouched := uint64(ms.BSSReclaimed-ms.BSSFaulted) * mm.PageSize; untouched < p.RssAnon {
		p.RssAnon -= untouched
	}
	p.RssShmem = 0
	st.vmPeak = max(st.vmPeak, p.VmSize)
	st.rssHWM = max(st.rssHWM, p.RssAnon+p.RssFile)
	p.VmPeak, p.VmHWM = st.vmPeak, st.rssHWM

	p.StartStack = st.sp
	p.ArgStart, p.ArgEnd, p.EnvStart, p.EnvEnd = st.argStart, st.argEnd, st.envStart, st.envEnd
	p.NumAuxv = st.nauxv
	copy(p.Auxv[:], st.auxv[:st.nauxv])
}

// comm is comm: the image file's name (yolk.exe), else argv[0]'s last
// element, at most 15 bytes, as Linux's from the file executed.
func (st *State[E]) comm(c *[16]byte) {
	name := st.env.Exe()
	if len(name) == 0 {
		_, name = st.env.Args()
	}
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			name = name[i+1:]
			break
		}
	}
	*c = [16]byte{}
	copy(c[:15], name)
}

// threads counts the threads running or ready to run and, if add, adds
// every thread to s in TID order.
func (st *State[E]) threads(s *procfs.Snapshot, add bool) (running uint32) {
	now := st.env.Now()
	for i := 0; i < sched.MaxTasks; i++ {
		t := sched.TaskAt(i)
		if !t.Alive() || t.Kernel {
			continue
		}
		th := procfs.Thread{TID: t.TID, State: 'S', CPU: max(int32(t.RunningOn()), 0)}
		if t.Runnable() {
			th.State = 'R'
			running++
		}
		if !add {
			continue
		}
		th.UserNS = uint64(t.CPUTime(now))
		th.Voluntary, th.Involuntary = t.Switches()
		th.SigPending, th.SigBlocked = st.env.SigThread(i)
		if !s.AddThread(th) {
			break
		}
		// Keep them in TID order (task/ lists them so): a slot is
		// reused by a later thread.
		for k := int(s.NumThreads) - 1; k > 0 && s.Threads[k-1].TID > s.Threads[k].TID; k-- {
			s.Threads[k-1], s.Threads[k] = s.Threads[k], s.Threads[k-1]
		}
	}
	return running
}

// sums are the areas' sizes by kind.
type sums struct {
	size  uint64 // all
	data  uint64 // private and writable, not the stack (VmData)
	stack uint64 // the initial stack's (VmStk)
}

func (st *State[E]) areaSums() (r sums) {
	top, size := st.env.Stack()
	stLo, stHi := top-size, top
	mm.Areas(func(a mm.Area) bool {
		n := uint64(a.End - a.Start)
		r.size += n
		k := uint64(0)
		if a.Start < stHi && a.End > stLo {
			k = uint64(min(a.End, stHi) - max(a.Start, stLo))
		}
		r.stack += k
		if a.Prot&mm.ProtWrite != 0 && !a.Shared {
			r.data += n - k
		}
		return true
	})
	return r
}

// readStack reads the initial stack back once (the kernel's
// buildInitStack's): the argument and environment strings lie at its
// top, argv[0]'s last; under them AT_RANDOM's bytes, then from the
// initial stack pointer argc, argv, envp and the auxiliary vector. The
// stack pointer is found as the word argc followed by argv[0]'s address
// (the string ending at the top), and the strings through the arrays'
// pointers, all within the top 8 KiB (the command line is at most 4 KiB).
func (st *State[E]) readStack() {
	if st.stackRead {
		return
	}
	st.stackRead = true
	b := st.stk[:]
	t, _ := st.env.Stack()
	top := uint64(t)
	base := top - uint64(len(b))
	nargs, argv0s := st.env.Args()
	if mm.CopyIn(b, uintptr(base)) != 0 || nargs < 1 {
		return
	}
	word := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	// str is the string at address a, its NUL included; nil if it is
	// not within b.
	str := func(a uint64) []byte {
		if a < base || a >= top {
			return nil
		}
		for i := int(a - base); i < len(b); i++ {
			if b[i] == 0 {
				return b[a-base : i+1]
			}
		}
		return nil
	}
	argv0 := top - uint64(len(argv0s)) - 1
	sp := -1
	for off := (len(b) - 16) &^ 15; off >= 0; off -= 16 {
		if word(off) == uint64(nargs) && word(off+8) == argv0 {
			sp = off
			break
		}
	}
	if sp < 0 {
		return
	}
	off := sp + 8
	st.argStart, st.argEnd, st.envStart, st.envEnd = top, top, top, top
	for k := 0; k < nargs && off+8 <= len(b); k, off = k+1, off+8 {
		a := word(off)
		st.nArgs += copy(st.args[st.nArgs:], str(a))
		st.argStart = min(st.argStart, a)
	}
	off += 8 // argv's NULL
	st.envEnd = st.argStart
	for ; off+8 <= len(b) && word(off) != 0; off += 8 {
		a := word(off)
		st.nEnv += copy(st.environ[st.nEnv:], str(a))
		st.envStart = min(st.envStart, a)
	}
	st.envStart = min(st.envStart, st.envEnd)
	off += 8 // envp's NULL
	st.sp = base + uint64(sp)
	for k := 0; k+1 < len(st.auxv) && off+16 <= len(b); k, off = k+2, off+16 {
		st.auxv[k], st.auxv[k+1] = word(off), word(off+8)
		if st.auxv[k] == atNull {
			st.nauxv = int32(k + 2)
			break
		}
	}
}

// atNull ends the auxiliary vector.
const atNull = 0
