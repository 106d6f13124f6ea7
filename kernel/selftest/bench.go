package main

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func benchSyscall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		syscall.Getpid()
	}
}

func benchTimeNow(b *testing.B) {
	for i := 0; i < b.N; i++ {
		time.Now()
	}
}

func benchPingPong(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	for i := 0; i < b.N; i++ {
		ping <- i
		<-pong
	}
	close(ping)
}

// benchYield measures sched_yield between two OS threads (kernel tasks):
// each call is a syscall plus a task switch through the ready queue.
func benchYield(b *testing.B) {
	stop := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for {
			select {
			case <-stop:
				return
			default:
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}()
	runtime.LockOSThread()
	for i := 0; i < b.N; i++ {
		syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	}
	runtime.UnlockOSThread()
	close(stop)
}

// benchSwitch times kernel task switches in the kernel: one op is a round
// trip (two switches) between two kernel tasks, with the minimal switch or
// the save-everything variant. The kernel times the loop with the TSC and
// that time, divided by b.N, is reported as ns/op (replacing the wall-clock
// figure, which would include the one system call per b.N), so benchstat's
// sec/op rows are the kernel-timed ones.
func benchSwitch(b *testing.B, all bool) {
	v := uintptr(0)
	if all {
		v = 1
	}
	ns, _, e := syscall.Syscall(sysYolkSwitch, uintptr(b.N), v, 0)
	if e != 0 {
		b.Fatalf("switch benchmark syscall: %v", e)
	}
	b.ReportMetric(float64(ns)/float64(b.N), "ns/op")
}
