package kernel

import (
	"sync/atomic"

	"yolk/kernel/calllog"
)

// The record of system calls (counts, yolk.strace, the ENOSYS log) is
// package calllog, and the kernel's halves of yolk's private calls that
// need nothing of its state are package testcall. callEnv is what the
// kernel supplies to both (calllog.Env, testcall.Env): the console and
// the CPUs' timer-interrupt counts.

type callEnv struct{}

func (callEnv) Acquire()                 { conAcquire() }
func (callEnv) Release()                 { conRelease() }
func (callEnv) Log(s string)             { klog(s) }
func (callEnv) Print(s string)           { kprint(s) }
func (callEnv) Dec(v int64)              { kprintDec(v) }
func (callEnv) Hex(v uint64, digits int) { kprintHex(v, digits) }
func (callEnv) TimerIRQs(cpu int) uint64 { return atomic.LoadUint64(&percpu[cpu].timer.fired) }
func (callEnv) TimerArms(cpu int) uint64 { return atomic.LoadUint64(&percpu[cpu].timer.arms) }

func printSyscallStats()   { calllog.PrintStats[callEnv]() }
func logENOSYS(nr uintptr) { calllog.ENOSYS[callEnv](nr) }
