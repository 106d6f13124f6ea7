// Command pingpong is a long channel ping-pong for linuxref's -program: 12
// rounds of 200 000 round trips between two goroutines (about 10 s under
// TCG, a steady state long enough to sample QEMU's threads from the host),
// each printed as a benchmark line. On Linux it also counts, over the
// whole run, the timer hrtimers started, their expiries, the local timer
// interrupts and the task switches (tracefs), and the process's context
// switches (getrusage: yolk counts none), on standard error; yolk has no tracefs
// (its kernel option yolk.syscallstats=1 prints its counts at exit). It
// turns trace events on: run it only in a guest of its own.
//
//	go run ./qemu/linuxref/cmd/linuxref -machine pc -smp 2 -count 2 -program ./qemu/linuxref/cmd/pingpong
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	trace := syscall.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, "") == nil
	if !trace {
		os.MkdirAll("/sys/kernel/tracing", 0755)
		trace = syscall.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, "") == nil
	}
	if trace {
		os.WriteFile("/sys/kernel/tracing/buffer_size_kb", []byte("6144"), 0)
		for _, e := range []string{"timer/hrtimer_start", "timer/hrtimer_expire_entry", "irq_vectors/local_timer_entry", "sched/sched_switch"} {
			if err := os.WriteFile("/sys/kernel/tracing/events/"+e+"/enable", []byte("1"), 0); err != nil {
				fmt.Fprintln(os.Stderr, "pingpong:", err)
			}
		}
	}
	var r0 syscall.Rusage
	syscall.Getrusage(0, &r0)
	total := 0
	for r := 0; r < 12; r++ {
		n := 200000
		t := time.Now()
		for i := 0; i < n; i++ {
			ping <- i
			<-pong
		}
		total += n
		d := time.Since(t)
		fmt.Printf("BenchmarkPingPong-%d\t%d\t%.1f ns/op\n", runtime.GOMAXPROCS(0), n, float64(d.Nanoseconds())/float64(n))
	}
	var r1 syscall.Rusage
	syscall.Getrusage(0, &r1)
	if trace {
		os.WriteFile("/sys/kernel/tracing/tracing_on", []byte("0"), 0)
		tf, _ := os.Open("/sys/kernel/tracing/trace")
		sc := bufio.NewScanner(tf)
		cnt := map[string]int{}
		for sc.Scan() {
			l := sc.Text()
			for _, e := range []string{"hrtimer_start:", "hrtimer_expire_entry:", "local_timer_entry:", "sched_switch:"} {
				if strings.Contains(l, " "+e) {
					cnt[e]++
					if e == "hrtimer_start:" {
						if i := strings.Index(l, "function="); i >= 0 {
							f := strings.Fields(l[i:])[0]
							cnt[f]++
						}
					}
				}
			}
		}
		s, _ := os.ReadFile("/sys/kernel/tracing/per_cpu/cpu0/stats")
		fmt.Fprintf(os.Stderr, "pingpong: trace counts %v\npingpong: CPU 0 trace buffer (overrun 0: no event lost): %s\n", cnt, s)
	}
	fmt.Fprintf(os.Stderr, "pingpong: context switches, voluntary %d, involuntary %d\n", r1.Nvcsw-r0.Nvcsw, r1.Nivcsw-r0.Nivcsw)
	close(ping)
}
