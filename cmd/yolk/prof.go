package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"yolk/qemu/gdbprof"
)

// prof is "yolk prof": yolk run with a sampling profiler attached through
// QEMU's gdb stub (package gdbprof), for the time the guest spends in the
// kernel, which Go's own profiler cannot see.
func prof(args []string) int { return boot("yolk prof", args, &profiler{}) }

// profiler is yolk prof's part of a boot: its flags, and the goroutine
// that samples the guest while boot's qemu.Run runs it.
type profiler struct {
	out      string
	n        int
	interval time.Duration
	delay    time.Duration
	kill     bool

	cancel context.CancelFunc // ends the run (the guest) early
	done   chan error         // the sampler's outcome
	killed bool               // the sampler ended the guest (-kill, or no stub): set before done
	err    error              // the outcome, after end
}

// dialTimeout is how long the profiler tries to reach the gdb stub of the
// QEMU it started.
const dialTimeout = 30 * time.Second

func (p *profiler) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&p.out, "o", "cpu.pprof", "write the profile to this `file` (pprof format: go tool pprof -top FILE)")
	fs.IntVar(&p.n, "n", 1000, "stop the guest this many times (each stop samples every vCPU)")
	fs.DurationVar(&p.interval, "interval", 5*time.Millisecond, "how long the guest runs between two stops")
	fs.DurationVar(&p.delay, "delay", 5*time.Second, "let the guest run this long before the first sample (boot and warm-up)")
	fs.BoolVar(&p.kill, "kill", false, "end the guest after the samples (default: it runs on to its end and yolk prof exits with its status)")
}

func (p *profiler) usage(fs *flag.FlagSet) func() {
	return func() {
		fmt.Fprintln(os.Stderr, "usage: yolk prof [-o cpu.pprof] [-n 1000] [-interval 5ms] [-delay 5s] [-kill] [yolk run's flags] app.elf [arg ...]\n"+
			"boots the image as yolk run does, with QEMU's gdb stub on a free loopback port; after -delay it stops\n"+
			"the guest every -interval, reads each vCPU's frame-pointer stack, and writes a pprof profile of the\n"+
			"guest's time, the kernel's included (which Go's own profiler does not see): go tool pprof -top cpu.pprof")
		fs.PrintDefaults()
	}
}

// check refuses what the profiler cannot do with the boot's flags.
func (p *profiler) check(gdb int, board string) error {
	switch {
	case gdb != 0:
		return errors.New("-gdb: yolk prof attaches to the gdb stub itself (on a free loopback port)")
	case board == "pc":
		return errors.New("-board pc: yolk prof boots ELF images (the kernel inside a PC image is the same ELF: profile that one)")
	case p.n < 1:
		return fmt.Errorf("-n %d: want at least one sample", p.n)
	case p.interval <= 0:
		return fmt.Errorf("-interval %v: want a positive interval", p.interval)
	case p.delay < 0:
		return fmt.Errorf("-delay %v: want zero or more", p.delay)
	}
	return nil
}

// start picks a free loopback port for the gdb stub, starts the sampler
// and returns the QEMU arguments that put the stub there with the guest
// halted (-S) until the sampler continues it. cancel ends ctx, the run's.
func (p *profiler) start(ctx context.Context, cancel context.CancelFunc, arch, symbols string) ([]string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("no free loopback port for the gdb stub: %w", err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	p.cancel = cancel
	p.done = make(chan error, 1)
	go func() { p.done <- p.sample(ctx, addr.String(), arch, symbols) }()
	return []string{"-gdb", "tcp:127.0.0.1:" + strconv.Itoa(addr.Port), "-S"}, nil
}

// sample connects to the stub, continues the guest, waits the delay,
// samples, writes the profile and lets the guest go (or ends it: -kill).
func (p *profiler) sample(ctx context.Context, addr, arch, symbols string) error {
	nc, err := dialStub(ctx, addr)
	if err != nil {
		p.killed = true
		p.cancel() // the guest waits halted for a debugger: end it
		return err
	}
	conn, err := gdbprof.NewConn(nc, arch)
	if err != nil {
		nc.Close()
		p.killed = true
		p.cancel()
		return fmt.Errorf("the gdb stub at %s: %w", addr, err)
	}
	defer conn.Close()
	sym, err := gdbprof.OpenSymbolizer(symbols)
	if err != nil {
		p.killed = true
		p.cancel()
		return fmt.Errorf("reading the image's symbols: %w", err)
	}
	if err := conn.Continue(); err != nil {
		return err
	}
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return errors.New("the guest ended before the first sample")
	}
	s := &gdbprof.Sampler{Conn: conn, Interval: p.interval, FuncEntry: sym.FuncEntry}
	start := time.Now()
	stacks, serr := s.Sample(p.n)
	took := time.Since(start)
	ended := serr != nil && (guestGone(serr) || ctx.Err() != nil)
	if serr == nil {
		if p.kill {
			p.killed = true
			p.cancel()
		} else if _, err := conn.Interrupt(); err == nil {
			conn.Detach() // QEMU lets the guest run on
		}
	}
	if len(stacks) == 0 {
		if ended || ctx.Err() != nil {
			return fmt.Errorf("the guest ended before the first sample (-delay %v)", p.delay)
		}
		return fmt.Errorf("sampling: %w", serr)
	}
	pp := gdbprof.NewProfile(stacks, sym, p.interval)
	pp.DurationNanos = took.Nanoseconds()
	if err := writeProfile(p.out, pp.Write); err != nil {
		return err
	}
	cpus := max(1, s.CPUs())
	stops := len(stacks) / cpus
	fmt.Fprintf(os.Stderr, "yolk prof: wrote %d samples (%d stops × %d vCPUs, every %v) to %s: go tool pprof -top %s\n",
		len(stacks), stops, cpus, p.interval, p.out, p.out)
	switch {
	case serr == nil:
		return nil
	case ended:
		fmt.Fprintf(os.Stderr, "yolk prof: the guest ended after %d of %d stops\n", stops, p.n)
		return nil
	}
	return fmt.Errorf("sampling stopped after %d stops: %w", stops, serr)
}

// guestGone reports whether a sampling error is the guest's (QEMU's) end.
func guestGone(err error) bool {
	return errors.Is(err, gdbprof.ErrExited) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// dialStub connects to the gdb stub at addr, retrying while QEMU starts.
func dialStub(ctx context.Context, addr string) (net.Conn, error) {
	end := time.Now().Add(dialTimeout)
	for {
		d := net.Dialer{Timeout: time.Second}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return nc, nil
		}
		if ctx.Err() != nil || time.Now().After(end) {
			return nil, fmt.Errorf("cannot reach QEMU's gdb stub at %s: %v", addr, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

func writeProfile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// end is called when the run is over: it waits for the sampler and reports
// its outcome. done: the sampler ended the guest itself (-kill, or no
// stub to reach), and code is yolk prof's status.
func (p *profiler) end(userCtx context.Context) (code int, done bool) {
	p.cancel() // QEMU is gone: the sampler's waits end
	p.err = <-p.done
	if p.err != nil && userCtx.Err() == nil {
		fmt.Fprintf(os.Stderr, "yolk prof: %v\n", p.err)
	}
	if !p.killed || userCtx.Err() != nil {
		return 0, false
	}
	if p.err != nil {
		return 1, true
	}
	return 0, true
}

// status is the exit status of a boot whose guest exited with code: the
// guest's, or 1 if the profile failed and the guest did not.
func (p *profiler) status(code int) int {
	if p != nil && p.err != nil && code == 0 {
		return 1
	}
	return code
}
