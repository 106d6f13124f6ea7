// Command host is the host side of netbench's benchmarks through QEMU's user
// network (docs/net-bench.md): it boots netbench -serve in a guest, yolk or
// Linux (Debian's cloud kernel, as qemu/linuxref boots it, with virtio_net
// loaded from the initramfs), in the same QEMU configuration (TCG, -cpu
// max, 128M, the machine and CPUs given, the same virtio-net-pci device on
// -netdev user with port forwards on 127.0.0.1), and measures from the host:
//
//   - HTTP through the forward with wrk (keep-alive, and "Connection:
//     close": a new connection per request): requests/s, p50 and p99;
//   - bulk TCP host→guest through a forward and guest→host through slirp's
//     gateway 10.0.2.2 to a sink on the host's 127.0.0.1: MB/s;
//   - UDP request/response through a forward (-c clients, each with one
//     datagram outstanding, echoed by the guest): responses/s, p50, p99
//     and datagrams lost;
//   - the guest's CPU time each of these took, from its /proc/stat before
//     and after (netbench's "/cpu"): µs of guest CPU a request, ms a MB;
//     and its context switches (ctxt), a request or a MB;
//   - the host CPU time QEMU's process took (its threads' user and system
//     time, from the host's /proc): µs a request, ms a MB, QEMU's own
//     work included, which the guest's clock does not see.
//
// With -net tap the same runs go over a tap device it makes (and removes
// at the end) instead of QEMU's user network: the host is 10.0.2.2/24 on
// the tap, the guest 10.0.2.15, reached directly (no forwards).
//
// Every boot and every load generator is bounded in time. Results are Go
// benchmark lines (benchstat), appended per round to
// <out>/<target>-smp<N>.txt; consoles in <out>/<target>-smp<N>-<round>.log.
//
//	go run ./cmd/netbench/host [-targets linux,yolk] [-smp 1,2] [-rounds 3]
//	    [-machine pc] [-d 5s] [-c 4] [-bulk 64] [-out out/netbench]
//	    [-targets linux,yolk,base -base OTHER.elf] [-net user|tap]
//	    [-threads] [-trace 2s] [-profile 2s]
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"yolk/qemu"
	"yolk/qemu/image"
	"yolk/qemu/linuxref"
)

var (
	targets  = flag.String("targets", "linux,yolk", "guests, comma-separated: linux, yolk, base (the -base image)")
	netMode  = flag.String("net", "user", "the guests' network: user (QEMU's, through port forwards on 127.0.0.1) or tap (a tap device this command makes and removes, the host 10.0.2.2/24 on it, the guest 10.0.2.15: needs root)")
	baseELF  = flag.String("base", "", "target base: another yolk image of cmd/netbench (e.g. main's build: yolk build -o base.elf ./cmd/netbench), booted as yolk is")
	baseEnv  = flag.String("baseenv", "", "for target base: kernel options or environment, comma-separated KEY=VALUE (e.g. yolk.idlepoll=20), to compare an option with the same image as -base")
	smps     = flag.String("smp", "1,2", "guest CPU counts, comma-separated")
	rounds   = flag.Int("rounds", 3, "boots of each target and CPU count (alternating targets)")
	warmup   = flag.Bool("warmup", true, "boot the first target once before round 1 and discard its numbers (a run's first boot is slow whatever the target)")
	machine  = flag.String("machine", "pc", "QEMU machine: pc or q35")
	dur      = flag.Duration("d", 5*time.Second, "wrk duration of each HTTP run")
	conns    = flag.Int("c", 4, "wrk connections")
	bulkMiB  = flag.Int("bulk", 64, "bulk transfer size in MiB, each direction")
	outDir   = flag.String("out", "out/netbench", "output directory")
	kernel   = flag.String("kerneldir", "out/linuxref/kernel", "where linuxref keeps Debian's kernel package")
	bootWait = flag.Duration("bootwait", 3*time.Minute, "how long to wait for the guest's server")
	bootN    = flag.Int("boot", 0, "instead: boot the trivial programs (with and without net, netsvc auto/on/off) this many times each on -bootmachines")
	bootMs   = flag.String("bootmachines", "pc,microvm", "machines for -boot")
	udpRows  = flag.Bool("udp", true, "measure UDP request/response (false for a -base image older than netbench's -udp)")
	traceDur = flag.Duration("trace", 0, "fetch a Go execution trace of this length from the middle of each keep-alive row (netbench's /debug/pprof/trace) into <out>/<target>-smp<N>-<round>.trace, for go tool trace; the row's numbers then include the tracer's cost")
	profDur  = flag.Duration("profile", 0, "fetch a Go CPU profile of this length from the middle of each keep-alive row (netbench's /debug/pprof/profile: the program's SIGPROF samples, its system calls' time included) into <out>/<target>-smp<N>-<round>.pprof, for go tool pprof")
	thrFlag  = flag.Bool("threads", false, "after each HTTP row, a comment line with the guest program's threads' context switches a request (voluntary+involuntary) and CPU ticks in that row, busiest first (netbench's /threads)")
)

// Modules virtio_net needs on Debian's cloud kernel (all =m there), in load
// order.
var modules = []string{
	"drivers/virtio/virtio_ring.ko", "drivers/virtio/virtio.ko",
	"drivers/virtio/virtio_pci_legacy_dev.ko", "drivers/virtio/virtio_pci_modern_dev.ko",
	"drivers/virtio/virtio_pci.ko", "net/core/failover.ko", "drivers/net/net_failover.ko",
	"drivers/net/virtio_net.ko",
}

func main() {
	flag.Parse()
	ctx := context.Background()
	if *bootN > 0 {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "netbench host:", err)
			os.Exit(1)
		}
		if err := bootBench(ctx, strings.Split(*bootMs, ","), *bootN); err != nil {
			fmt.Fprintln(os.Stderr, "netbench host:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "netbench host:", err)
		os.Exit(1)
	}
}

type guest struct {
	kernel, initrd, elf string
}

func run(ctx context.Context) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk not found (apt-get install wrk)")
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	g, err := build(ctx)
	if err != nil {
		return err
	}
	switch *netMode {
	case "user":
	case "tap":
		// The same addresses as slirp's, so that the guest program and
		// Linux's init need nothing new: the host is 10.0.2.2 on the tap.
		tap = fmt.Sprintf("ynb%d", os.Getpid()%100000)
		if err := tapUp(tap, tapHost+"/24"); err != nil {
			return fmt.Errorf("tap: %w", err)
		}
		defer tapDown(tap)
	default:
		return fmt.Errorf("-net %q: want user or tap", *netMode)
	}
	var cpus []int
	for _, s := range strings.Split(*smps, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		cpus = append(cpus, n)
	}
	ts := strings.Split(*targets, ",")
	if *warmup {
		fmt.Printf("warm-up: %s smp%d, numbers discarded\n", ts[0], cpus[0])
		if _, err := boot(ctx, g, ts[0], cpus[0], 0); err != nil {
			return fmt.Errorf("warm-up boot of %s: %w", ts[0], err)
		}
	}
	var failed []string
	for round := 1; round <= *rounds; round++ {
		for _, n := range cpus {
			order := ts
			if round%2 == 0 {
				order = reverse(ts)
			}
			for _, t := range order {
				lines, err := boot(ctx, g, t, n, round)
				if err != nil {
					// A guest that stopped answering after its rows
					// (Linux has, after the UDP row, now and then):
					// its rows count, the run goes on, and it fails
					// at the end.
					fmt.Fprintf(os.Stderr, "netbench host: %s smp %d round %d: %v\n", t, n, round, err)
					failed = append(failed, fmt.Sprintf("%s smp %d round %d", t, n, round))
					lines = append(lines, "# "+oneLine(err))
				}
				f, err := os.OpenFile(filepath.Join(*outDir, fmt.Sprintf("%s-smp%d.txt", t, n)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				if round == 1 {
					fmt.Fprintf(f, "goos: linux\ngoarch: amd64\npkg: yolk/cmd/netbench/host\n")
				}
				for _, l := range lines {
					fmt.Fprintln(f, l)
					fmt.Printf("%s smp%d round %d: %s\n", t, n, round, l)
				}
				f.Close()
			}
		}
	}
	if failed != nil {
		return fmt.Errorf("boots that failed (their consoles in %s): %s", *outDir, strings.Join(failed, ", "))
	}
	return nil
}

// The tap device run made ("": -net user) and the addresses on it.
var tap string

const (
	tapHost  = "10.0.2.2"
	tapGuest = "10.0.2.15"
)

func tapUp(name, addr string) error {
	if os.Geteuid() != 0 {
		return errors.New("not root: making a tap device needs it")
	}
	// A route to the guest as specific as the tap's /24 (a tap left by
	// hand on the same subnet) would take the host's traffic for the
	// guest: it would never answer.
	if l := qemu.TapRouteTaken(addr); l != "" {
		return fmt.Errorf("%s is already routed (%s): remove that route or its link first", addr, l)
	}
	for _, args := range [][]string{
		{"tuntap", "add", "dev", name, "mode", "tap"},
		{"addr", "add", addr, "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tapDown(name)
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func tapDown(name string) {
	exec.Command("ip", "link", "del", name).Run()
}

func reverse(s []string) []string {
	r := make([]string, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}

func build(ctx context.Context) (*guest, error) {
	k, err := linuxref.FetchKernel(ctx, *kernel, linuxref.DefaultPackage)
	if err != nil {
		return nil, err
	}
	root := filepath.Dir(filepath.Dir(k.Path))
	ver := strings.TrimPrefix(filepath.Base(k.Path), "vmlinuz-")
	prog := filepath.Join(*outDir, "netbench-linux")
	b := exec.CommandContext(ctx, "go", "build", "-o", prog, "./cmd/netbench")
	b.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	b.Stdout, b.Stderr = os.Stderr, os.Stderr
	if err := b.Run(); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(prog)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	c := linuxref.NewCPIOWriter(&buf)
	c.Dir("dev", 0o755)
	c.CharDev("dev/console", 0o600, 5, 1)
	c.Dir("modules", 0o755)
	for i, m := range modules {
		data, err := os.ReadFile(filepath.Join(root, "lib/modules", ver, "kernel", m))
		if err != nil {
			return nil, err
		}
		c.File(fmt.Sprintf("modules/%02d-%s", i, filepath.Base(m)), 0o644, data)
	}
	c.File("init", 0o755, bin)
	if err := c.Close(); err != nil {
		return nil, err
	}
	g := &guest{kernel: k.Path, initrd: filepath.Join(*outDir, "initrd-net.cpio"), elf: filepath.Join(*outDir, "netbench.elf")}
	if err := os.WriteFile(g.initrd, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs("./cmd/netbench")
	if _, err := image.Build(ctx, abs, image.Options{Output: g.elf, Arch: "amd64"}); err != nil {
		return nil, err
	}
	return g, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// boot boots target t with n CPUs, measures, and returns benchmark lines.
func boot(ctx context.Context, g *guest, t string, n, round int) ([]string, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	sinkPort, err := freePort()
	if err != nil {
		return nil, err
	}
	udpPort, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	fwds := []qemu.Forward{{HostAddr: "127.0.0.1", HostPort: httpPort, GuestPort: 8080}, {HostAddr: "127.0.0.1", HostPort: sinkPort, GuestPort: 8081}}
	args := []string{"-serve", ":8080", "-sink", ":8081", "-for", "4m"}
	if *udpRows {
		fwds = append(fwds, qemu.Forward{UDP: true, HostAddr: "127.0.0.1", HostPort: udpPort, GuestPort: 8082})
		args = append(args, "-udp", ":8082")
	}
	logPath := filepath.Join(*outDir, fmt.Sprintf("%s-smp%d-%d.log", t, n, round))
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	switch t {
	case "linux":
		netdev := "user,id=net0"
		for _, f := range fwds {
			proto := "tcp"
			if f.UDP {
				proto = "udp"
			}
			netdev += fmt.Sprintf(",hostfwd=%s:%s:%d-:%d", proto, f.HostAddr, f.HostPort, f.GuestPort)
		}
		if tap != "" {
			netdev = "tap,id=net0,ifname=" + tap + ",script=no,downscript=no"
		}
		c := linuxref.Config{Kernel: g.kernel, Initrd: g.initrd, Machine: *machine, SMP: n, Args: args,
			Timeout: 5 * time.Minute, Log: log, Stderr: log,
			Extra: []string{"-netdev", netdev, "-device", "virtio-net-pci,netdev=net0,disable-legacy=on,romfile="}}
		go func() { _, err := linuxref.Run(ctx, c); done <- err }()
	case "yolk", "base":
		elf := g.elf
		if t == "base" {
			if *baseELF == "" {
				return nil, errors.New("target base needs -base ELF")
			}
			elf = *baseELF
		}
		c := qemu.Config{Image: elf, Machine: *machine, Accel: "tcg", SMP: n, Args: args,
			Timeout: 5 * time.Minute, Net: qemu.NetUser, Forwards: fwds, Stdout: log, Stderr: log}
		if tap != "" {
			c.Net, c.Forwards, c.Env = qemu.NetTap+tap, nil, []string{"yolk.net=" + tapGuest + "/24," + tapHost}
		}
		if t == "base" && *baseEnv != "" {
			c.Env = append(c.Env, strings.Split(*baseEnv, ",")...)
		}
		go func() {
			r, err := qemu.Run(ctx, c)
			if err == nil && r.ExitCode != 0 {
				err = fmt.Errorf("yolk exit %d: %v", r.ExitCode, r.Messages)
			}
			done <- err
		}()
	default:
		return nil, fmt.Errorf("target %q: want linux, yolk or base", t)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	sinkAddr, pushFrom, udpAddr := fmt.Sprintf("127.0.0.1:%d", sinkPort), "127.0.0.1", fmt.Sprintf("127.0.0.1:%d", udpPort)
	if tap != "" {
		base, sinkAddr, pushFrom, udpAddr = "http://"+tapGuest+":8080", tapGuest+":8081", tapHost, tapGuest+":8082"
	}
	if err := waitUp(ctx, base+"/", done); err != nil {
		return nil, fmt.Errorf("%w (console in %s)", err, logPath)
	}
	suffix := ""
	if n > 1 {
		suffix = "-" + strconv.Itoa(n)
	}
	var lines []string
	// measure runs f between two readings of the guest's CPU time and
	// adds its cost per unit (f's count of them) to f's line.
	measure := func(name, unit string, perUnit float64, f func() (string, float64, error)) {
		cpu0, cerr := guestCPU(base)
		host0, herr := qemuCPU()
		l, units, err := f()
		host1, herr1 := qemuCPU()
		if err != nil {
			lines = append(lines, fmt.Sprintf("# %s: %s", name, oneLine(err)))
			return
		}
		if cpu1, err := guestCPU(base); cerr == nil && err == nil && units > 0 {
			l += fmt.Sprintf("\t%.1f %s", float64(cpu1.busy-cpu0.busy)*perUnit/units, unit)
			per := "op"
			if strings.HasSuffix(unit, "/MB") {
				per = "MB"
			}
			if cpu1.ctxt != 0 {
				l += fmt.Sprintf("\t%.2f switches/%s", float64(cpu1.ctxt-cpu0.ctxt)/units, per)
			}
			if herr == nil && herr1 == nil {
				l += fmt.Sprintf("\t%.1f host-%s", float64(host1-host0)*perUnit/units, unit)
			}
		} else if cerr != nil || err != nil {
			fmt.Fprintf(os.Stderr, "netbench host: %s: guest CPU time not read: %v %v\n", name, cerr, err)
		}
		lines = append(lines, "Benchmark"+name+suffix+"\t"+l)
	}
	const tickUS = 1e6 / 100 // /proc/stat counts USER_HZ (100) ticks
	for _, mode := range []struct{ name, hdr string }{{"FwdHTTPKeepAlive", ""}, {"FwdHTTPNewConn", "Connection: close"}} {
		var t0 map[string][2]int64
		if *thrFlag {
			t0 = guestThreads(base)
		}
		var reqs float64
		measure(mode.name, "cpu-us/op", tickUS, func() (string, float64, error) {
			for _, f := range []struct {
				what, ext string
				d         time.Duration
			}{{"trace", ".trace", *traceDur}, {"profile", ".pprof", *profDur}} {
				if f.d <= 0 || mode.hdr != "" {
					continue
				}
				tr := make(chan error, 1)
				go func() { tr <- fetchPprof(ctx, base, f.what, f.d, strings.TrimSuffix(logPath, ".log")+f.ext) }()
				defer func() {
					if err := <-tr; err != nil {
						fmt.Fprintf(os.Stderr, "netbench host: %s: %v\n", f.what, err)
					}
				}()
			}
			l, n, err := runWrk(ctx, base+"/", mode.hdr)
			reqs = n
			return l, n, err
		})
		if t0 != nil && reqs > 0 {
			if t1 := guestThreads(base); t1 != nil {
				lines = append(lines, "# threads "+mode.name+suffix+": "+threadDeltas(t0, t1, reqs))
			}
		}
	}
	size := int64(*bulkMiB) << 20
	mb := float64(size) / 1e6
	measure("FwdBulkHostToGuest", "cpu-ms/MB", tickUS/1e3, func() (string, float64, error) {
		l, err := bulkIn(ctx, sinkAddr, size)
		return l, mb, err
	})
	measure("FwdBulkGuestToHost", "cpu-ms/MB", tickUS/1e3, func() (string, float64, error) {
		l, err := bulkOut(ctx, base, pushFrom, size)
		return l, mb, err
	})
	if *udpRows {
		measure("FwdUDPRoundTrip", "cpu-us/op", tickUS, func() (string, float64, error) { return udpRR(ctx, udpAddr) })
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if resp, err := hc.Get(base + "/quit"); err == nil {
		resp.Body.Close()
	}
	select {
	case err := <-done:
		if err != nil {
			return lines, fmt.Errorf("%w (console in %s)", err, logPath)
		}
	case <-time.After(90 * time.Second):
		cancel()
		<-done
		return lines, fmt.Errorf("guest did not exit after /quit (console in %s)", logPath)
	}
	return lines, nil
}

func waitUp(ctx context.Context, url string, done chan error) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(*bootWait)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("guest ended before serving: %v", err)
		default:
		}
		resp, err := hc.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return errors.New("guest's server not up in time")
}

var (
	wrkReqs = regexp.MustCompile(`(\d+) requests in ([\d.]+)(ms|s|m)`)
	wrkRate = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkPct  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)`)
	wrkErrs = regexp.MustCompile(`Socket errors: (.*)`)
)

// runWrk runs wrk (one thread, -c connections, -d) with an optional header
// and returns "N ns/op req/s p50-ms p99-ms" and the requests served.
func runWrk(ctx context.Context, url, hdr string) (string, float64, error) {
	args := []string{"-t1", "-c" + strconv.Itoa(*conns), "-d" + strconv.Itoa(int(dur.Seconds())) + "s", "--timeout", "5s", "--latency"}
	if hdr != "" {
		args = append(args, "-H", hdr)
	}
	args = append(args, url)
	ctx, cancel := context.WithTimeout(ctx, *dur+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "wrk", args...).CombinedOutput()
	if err != nil {
		return "", 0, fmt.Errorf("wrk: %v: %s", err, out)
	}
	s := string(out)
	m := wrkReqs.FindStringSubmatch(s)
	r := wrkRate.FindStringSubmatch(s)
	p := wrkPct.FindAllStringSubmatch(s, -1)
	if m == nil || r == nil || len(p) != 2 {
		return "", 0, fmt.Errorf("wrk output not understood: %s", s)
	}
	if e := wrkErrs.FindStringSubmatch(s); e != nil {
		fmt.Fprintf(os.Stderr, "netbench host: wrk socket errors: %s\n", e[1])
	}
	rate, _ := strconv.ParseFloat(r[1], 64)
	ms := func(v, unit string) float64 {
		f, _ := strconv.ParseFloat(v, 64)
		switch unit {
		case "us":
			return f / 1000
		case "s":
			return f * 1000
		}
		return f
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	return fmt.Sprintf("%s\t%.0f ns/op\t%.1f req/s\t%.3f p50-ms\t%.3f p99-ms", m[1], 1e9/rate, rate, ms(p[0][2], p[0][3]), ms(p[1][2], p[1][3])), n, nil
}

// fetchPprof waits until the row is under way ((-d - d)/2 in), then
// writes the guest program's net/http/pprof answer of d (what: trace or
// profile) to path.
func fetchPprof(ctx context.Context, base, what string, d time.Duration, path string) error {
	if d >= *dur {
		return fmt.Errorf("-%s %v must be shorter than -d %v", what, d, *dur)
	}
	select {
	case <-time.After((*dur - d) / 2):
	case <-ctx.Done():
		return ctx.Err()
	}
	hc := &http.Client{Timeout: d + 20*time.Second}
	resp, err := hc.Get(fmt.Sprintf("%s/debug/pprof/%s?seconds=%g", base, what, d.Seconds()))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// qemuCPU is the CPU time, in USER_HZ ticks (the host's /proc/PID/stat,
// user and system), of the one QEMU process this program runs (boots are
// one at a time): its direct child whose name starts "qemu-system".
func qemuCPU() (int64, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold
		// spaces, so the fields are counted after its closing parenthesis.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || !bytes.HasPrefix(b[open+1:end], []byte("qemu-system")) {
			continue
		}
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != me || pid == me {
			continue
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
		}
		return u + st, nil
	}
	return 0, errors.New("no QEMU process of ours in /proc")
}

// cpuCount is what netbench's "/cpu" answers: the guest's busy CPU time,
// in USER_HZ ticks over all its CPUs, and its context switches.
type cpuCount struct{ busy, ctxt int64 }

// guestCPU reads the guest's counts from netbench's "/cpu".
func guestCPU(base string) (cpuCount, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(base + "/cpu")
	if err != nil {
		return cpuCount{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return cpuCount{}, fmt.Errorf("/cpu: %s: %s", resp.Status, b)
	}
	var c cpuCount
	var idle int64
	if _, err := fmt.Sscan(string(b), &c.busy, &idle); err != nil {
		return cpuCount{}, fmt.Errorf("/cpu: %q: %v", b, err)
	}
	if f := strings.Fields(string(b)); len(f) > 2 { // not from an image older than the count
		c.ctxt, _ = strconv.ParseInt(f[2], 10, 64)
	}
	return c, nil
}

// udpRR runs -c clients against the guest's UDP echo at addr for -d, each
// with one datagram outstanding (64 bytes, its sequence number first),
// and returns "N ns/op resp/s p50-ms p99-ms lost" and N. A datagram not
// echoed within udpWait counts as lost and the client sends the next.
func udpRR(ctx context.Context, addr string) (string, float64, error) {
	const udpWait = 250 * time.Millisecond
	type res struct {
		lat  []time.Duration
		lost int
		err  error
	}
	ch := make(chan res, *conns)
	start := time.Now()
	end := start.Add(*dur)
	for i := 0; i < *conns; i++ {
		go func() {
			var r res
			defer func() { ch <- r }()
			c, err := net.Dial("udp", addr)
			if err != nil {
				r.err = err
				return
			}
			defer c.Close()
			var out, in [64]byte
			for seq := uint64(1); time.Now().Before(end) && ctx.Err() == nil; seq++ {
				binary.BigEndian.PutUint64(out[:], seq)
				t0 := time.Now()
				if _, err := c.Write(out[:]); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
					r.err = err
					return
				}
				c.SetReadDeadline(t0.Add(udpWait))
				for {
					n, err := c.Read(in[:])
					if err != nil {
						// Lost: not echoed in time, or an ICMP error
						// (the guest's echo not up yet) for it.
						if ne, ok := err.(net.Error); ok && ne.Timeout() || errors.Is(err, syscall.ECONNREFUSED) {
							r.lost++
							break
						}
						r.err = err
						return
					}
					if n == len(in) && binary.BigEndian.Uint64(in[:]) == seq {
						r.lat = append(r.lat, time.Since(t0))
						break
					}
					// An echo of a datagram given up for lost.
				}
			}
		}()
	}
	var all []time.Duration
	lost := 0
	var firstErr error
	for i := 0; i < *conns; i++ {
		r := <-ch
		all = append(all, r.lat...)
		lost += r.lost
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
	}
	el := time.Since(start)
	if firstErr != nil {
		return "", 0, firstErr
	}
	if len(all) == 0 {
		return "", 0, fmt.Errorf("no datagram echoed (%d lost)", lost)
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
	n := len(all)
	rate := float64(n) / el.Seconds()
	return fmt.Sprintf("%d\t%.0f ns/op\t%.1f resp/s\t%.3f p50-ms\t%.3f p99-ms\t%d lost", n, 1e9/rate, rate, pct(0.50), pct(0.99), lost), float64(n), nil
}

func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// bulkIn writes size bytes to the guest's sink at addr (the forward on
// 127.0.0.1, or the guest's address over the tap) and waits for its count; MB/s over the host's time from the first write to
// the answer.
func bulkIn(ctx context.Context, addr string, size int64) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Minute))
	buf := make([]byte, 64<<10)
	start := time.Now()
	for sent := int64(0); sent < size; {
		k := min(int64(len(buf)), size-sent)
		m, err := c.Write(buf[:k])
		sent += int64(m)
		if err != nil {
			return "", err
		}
	}
	c.(*net.TCPConn).CloseWrite()
	var ans [16]byte
	if _, err := io.ReadFull(c, ans[:]); err != nil {
		return "", fmt.Errorf("sink's answer: %v", err)
	}
	el := time.Since(start)
	if got := int64(binary.BigEndian.Uint64(ans[:8])); got != size {
		return "", fmt.Errorf("guest read %d bytes of %d", got, size)
	}
	return fmt.Sprintf("1\t%d ns/op\t%.2f MB/s", el.Nanoseconds(), float64(size)/el.Seconds()/1e6), nil
}

// bulkOut has the guest dial 10.0.2.2:PORT (slirp: the host's 127.0.0.1;
// over the tap: the host's tap address) and write size bytes to a sink
// here, listening on listen; MB/s over the host's time from the
// accept to the end of the stream.
func bulkOut(ctx context.Context, base, listen string, size int64) (string, error) {
	ln, err := net.Listen("tcp", listen+":0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	type res struct {
		n  int64
		el time.Duration
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Minute))
		start := time.Now()
		n, _ := io.Copy(io.Discard, c)
		ch <- res{n, time.Since(start)}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	hc := &http.Client{Timeout: 4 * time.Minute}
	resp, err := hc.Get(fmt.Sprintf("%s/push?addr=10.0.2.2:%d&n=%d", base, port, size))
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("push: %s: %s", resp.Status, body)
	}
	var r res
	select {
	case r = <-ch:
	case <-time.After(30 * time.Second):
		return "", errors.New("host sink did not finish")
	}
	if r.n != size {
		return "", fmt.Errorf("host read %d bytes of %d (guest: %s)", r.n, size, strings.TrimSpace(string(body)))
	}
	return fmt.Sprintf("1\t%d ns/op\t%.2f MB/s", r.el.Nanoseconds(), float64(size)/r.el.Seconds()/1e6), nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " | ") }

// guestThreads reads netbench's /threads: for each thread id its context
// switches (voluntary and involuntary) and CPU ticks; nil (and a line on
// stderr) if it cannot, as from an image older than /threads.
func guestThreads(base string) map[string][2]int64 {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(base + "/threads")
	if err != nil {
		fmt.Fprintf(os.Stderr, "netbench host: /threads: %v\n", err)
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		fmt.Fprintf(os.Stderr, "netbench host: /threads: %s\n", resp.Status)
		return nil
	}
	m := map[string][2]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		var tid string
		var vol, invol, ticks int64
		if n, _ := fmt.Sscan(l, &tid, &vol, &invol, &ticks); n == 4 {
			m[tid] = [2]int64{vol + invol, ticks}
		}
	}
	return m
}

// threadDeltas formats, busiest first, each thread's switches a request
// and its CPU ticks between readings a and b (a thread new in b counts
// from zero).
func threadDeltas(a, b map[string][2]int64, reqs float64) string {
	type d struct {
		tid    string
		sw, tk int64
	}
	var ds []d
	for tid, v := range b {
		if dv := (d{tid, v[0] - a[tid][0], v[1] - a[tid][1]}); dv.sw > 0 || dv.tk > 0 {
			ds = append(ds, dv)
		}
	}
	slices.SortFunc(ds, func(x, y d) int { return int(y.sw - x.sw) })
	var sb strings.Builder
	for _, v := range ds {
		fmt.Fprintf(&sb, " %s:%.2f/%dt", v.tid, float64(v.sw)/reqs, v.tk)
	}
	return strings.TrimSpace(sb.String())
}
