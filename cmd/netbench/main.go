// Command netbench is the networking benchmark program of docs/net-bench.md.
// It runs in a guest (yolk, or Linux as /init of linuxref's initramfs) and
// has two modes.
//
// Without -serve it runs the loopback benchmarks inside the guest with
// testing.Benchmark and prints Go benchmark lines (benchstat's format):
//
//	netbench [-bench REGEXP] [-benchtime 1s]
//
// With -serve it is the guest side of the benchmarks through QEMU's user
// network: a net/http server on ADDR answering a small body at "/", a bulk
// sink on -sink (reads a connection to its end, then answers with the byte
// count), and "/push?addr=10.0.2.2:PORT&n=BYTES", which dials the host
// through slirp's gateway and writes n bytes; "/cpu" answers with the
// guest's CPU time so far from /proc/stat (busy and idle, in USER_HZ
// ticks, all CPUs) and its context switches (ctxt), which the host reads
// around each run for the cost of a request or a megabyte; -udp echoes every datagram to its sender.
// "/debug/pprof/trace?seconds=N" and "/debug/pprof/profile?seconds=N" are
// net/http/pprof's Go execution trace and CPU profile of the guest program
// (the host's -trace fetches the first). "/quit" (or -for) ends it.
//
//	netbench -serve :8080 -sink :8081 [-udp :8082] [-for 5m]
//
// As pid 1 on Linux (not on yolk, whose uname release says yolk) it first
// does what an init would: loads the kernel modules in /modules (virtio_net
// and what it needs, in name order), brings lo up and, when eth0 exists,
// gives it QEMU's user-network address 10.0.2.15/24.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	benchRe   = flag.String("bench", ".", "run the benchmarks matching this regular expression")
	benchTime = flag.Duration("benchtime", time.Second, "target time of each benchmark")
	serve     = flag.String("serve", "", "serve HTTP on this address instead of running the benchmarks")
	sink      = flag.String("sink", "", "with -serve: the bulk sink's address")
	udpEcho   = flag.String("udp", "", "with -serve: echo UDP datagrams on this address")
	serveFor  = flag.Duration("for", 5*time.Minute, "with -serve: exit after this long")
)

func main() {
	testing.Init()
	// linuxref's default guest arguments are "-run ^$ -bench ."; -run is
	// accepted and ignored.
	flag.String("run", "", "ignored (linuxref passes it)")
	flag.Parse()
	if os.Getpid() == 1 && !isYolk() {
		linuxInit()
	}
	if *serve != "" {
		serveMain()
		return
	}
	flag.Set("test.benchtime", benchTime.String())
	re, err := regexp.Compile(*benchRe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		os.Exit(2)
	}
	fmt.Printf("goos: %s\ngoarch: %s\npkg: yolk/cmd/netbench\n", runtime.GOOS, runtime.GOARCH)
	failed := false
	for _, bm := range benchmarks {
		if !re.MatchString(bm.name) {
			continue
		}
		errMu.Lock()
		benchErr = nil
		errMu.Unlock()
		r := testing.Benchmark(bm.f)
		errMu.Lock()
		e := benchErr
		errMu.Unlock()
		if e != nil || r.N == 0 {
			fmt.Printf("--- FAIL: Benchmark%s: %v\n", bm.name, e)
			failed = true
			continue
		}
		name := "Benchmark" + bm.name
		if p := runtime.GOMAXPROCS(0); p > 1 {
			name += "-" + strconv.Itoa(p)
		}
		fmt.Printf("%s\t%s\n", name, r.String())
	}
	if failed {
		os.Exit(1)
	}
}

func isYolk() bool {
	return strings.Contains(unameRelease(), "yolk")
}

var benchmarks = []struct {
	name string
	f    func(*testing.B)
}{
	{"HTTPKeepAlive", benchHTTPKeepAlive},
	{"TCPRoundTrip1B", func(b *testing.B) { benchRoundTrip(b, "tcp", "127.0.0.1:0") }},
	{"TCP6RoundTrip1B", func(b *testing.B) { benchRoundTrip(b, "tcp6", "[::1]:0") }},
	{"UDPRoundTrip1B", benchUDPRoundTrip},
	{"UnixRoundTrip1B", func(b *testing.B) { benchRoundTrip(b, "unix", "@netbench-rt") }},
	{"TCPBulk", benchTCPBulk},
	{"TCPAcceptClose", benchAcceptClose},
}

// benchErr records the first setup or I/O failure of a benchmark: a
// benchmark function cannot return an error through testing.Benchmark, and
// b.Fatal outside a test binary only ends the goroutine.
var (
	errMu    sync.Mutex
	benchErr error
)

func fail(b *testing.B, err error) {
	errMu.Lock()
	if benchErr == nil {
		benchErr = err
	}
	errMu.Unlock()
	b.FailNow()
}

func benchHTTPKeepAlive(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(b, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(hello)}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	url := "http://" + ln.Addr().String() + "/"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get(url)
		if err != nil {
			fail(b, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

var helloBody = []byte("hello from netbench\n")

func hello(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write(helloBody)
}

// pair returns both ends of a connection on network/addr.
func pair(b *testing.B, network, addr string) (client, server net.Conn, ln net.Listener) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		fail(b, err)
	}
	ch := make(chan net.Conn, 1)
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		ch <- c
	}()
	client, err = net.Dial(network, ln.Addr().String())
	if err != nil {
		ln.Close()
		fail(b, err)
	}
	select {
	case server = <-ch:
	case err := <-errc:
		fail(b, err)
	}
	return client, server, ln
}

func benchRoundTrip(b *testing.B, network, addr string) {
	c, s, ln := pair(b, network, addr)
	defer ln.Close()
	defer c.Close()
	go func() {
		defer s.Close()
		var buf [1]byte
		for {
			if _, err := io.ReadFull(s, buf[:]); err != nil {
				return
			}
			if _, err := s.Write(buf[:]); err != nil {
				return
			}
		}
	}()
	var buf [1]byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf[:]); err != nil {
			fail(b, err)
		}
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			fail(b, err)
		}
	}
}

func benchUDPRoundTrip(b *testing.B) {
	s, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		fail(b, err)
	}
	defer s.Close()
	c, err := net.Dial("udp", s.LocalAddr().String())
	if err != nil {
		fail(b, err)
	}
	defer c.Close()
	go func() {
		var buf [64]byte
		for {
			n, a, err := s.ReadFrom(buf[:])
			if err != nil {
				return
			}
			s.WriteTo(buf[:n], a)
		}
	}()
	var buf [1]byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf[:]); err != nil {
			fail(b, err)
		}
		if _, err := c.Read(buf[:]); err != nil {
			fail(b, err)
		}
	}
}

const bulkChunk = 64 << 10

func benchTCPBulk(b *testing.B) {
	c, s, ln := pair(b, "tcp", "127.0.0.1:0")
	defer ln.Close()
	done := make(chan int64)
	go func() {
		n, _ := io.Copy(io.Discard, s)
		s.Close()
		done <- n
	}()
	buf := make([]byte, bulkChunk)
	b.SetBytes(bulkChunk)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf); err != nil {
			fail(b, err)
		}
	}
	c.Close()
	if n := <-done; n != int64(b.N)*bulkChunk {
		fail(b, fmt.Errorf("bulk: read %d bytes, wrote %d", n, int64(b.N)*bulkChunk))
	}
}

// benchAcceptClose: one op is a dial, the server's accept and both ends'
// close (connections accepted and closed per second = 1e9 / ns/op).
func benchAcceptClose(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(b, err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fail(b, err)
		}
		// Wait for the server's close, so that the op covers accept and
		// both closes and connections do not pile up.
		var one [1]byte
		c.Read(one[:])
		c.Close()
	}
}

// serveMain is the guest side of the benchmarks through the NIC.
func serveMain() {
	mux := http.NewServeMux()
	mux.HandleFunc("/", hello)
	quit := make(chan struct{})
	var once sync.Once
	mux.HandleFunc("/quit", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "bye\n")
		once.Do(func() { close(quit) })
	})
	mux.HandleFunc("/push", push)
	mux.HandleFunc("/cpu", cpuTime)
	mux.HandleFunc("/threads", threads)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	ln, err := net.Listen("tcp", *serve)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	if *sink != "" {
		sl, err := net.Listen("tcp", *sink)
		if err != nil {
			fmt.Fprintln(os.Stderr, "netbench:", err)
			os.Exit(1)
		}
		go sinkLoop(sl)
	}
	if *udpEcho != "" {
		pc, err := net.ListenPacket("udp", *udpEcho)
		if err != nil {
			fmt.Fprintln(os.Stderr, "netbench:", err)
			os.Exit(1)
		}
		go echoLoop(pc)
	}
	fmt.Printf("netbench: serving on %s (sink %q)\n", *serve, *sink)
	select {
	case <-quit:
		time.Sleep(200 * time.Millisecond) // let the reply go out
	case <-time.After(*serveFor):
		fmt.Println("netbench: -for elapsed")
	}
	fmt.Println("netbench: done")
}

// sinkLoop reads each connection to its end, then writes the byte count
// (8 bytes, big-endian) and the nanoseconds from the first byte to the end.
func sinkLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReaderSize(c, 64<<10)
			if _, err := br.Peek(1); err != nil {
				return
			}
			start := time.Now()
			n, _ := io.Copy(io.Discard, br)
			var out [16]byte
			binary.BigEndian.PutUint64(out[:8], uint64(n))
			binary.BigEndian.PutUint64(out[8:], uint64(time.Since(start)))
			c.Write(out[:])
		}()
	}
}

// echoLoop sends every datagram back to where it came from.
func echoLoop(pc net.PacketConn) {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "netbench: udp echo:", err)
			return
		}
		pc.WriteTo(buf[:n], from)
	}
}

// cpuTime answers "BUSY IDLE CTXT": the first line of /proc/stat (all CPUs),
// in USER_HZ ticks; busy is user, nice, system, irq and softirq, idle is
// idle and iowait (steal is the host's, guest time is in user already);
// CTXT is its context switches.
func cpuTime(w http.ResponseWriter, r *http.Request) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		http.Error(w, "/proc/stat: no cpu line: "+line, http.StatusInternalServerError)
		return
	}
	var busy, idle uint64
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			http.Error(w, "/proc/stat: "+line, http.StatusInternalServerError)
			return
		}
		switch i {
		case 0, 1, 2, 5, 6:
			busy += n
		case 3, 4:
			idle += n
		}
	}
	var ctxt uint64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ctxt "); ok {
			ctxt, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	fmt.Fprintf(w, "%d %d %d\n", busy, idle, ctxt)
}

// push dials addr (the host through slirp's gateway, 10.0.2.2 only) and
// writes n bytes; it answers with the byte count and the guest's time.
func push(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	host, _, herr := net.SplitHostPort(addr)
	if err != nil || herr != nil || host != "10.0.2.2" || n <= 0 || n > 1<<30 {
		http.Error(w, "want addr=10.0.2.2:PORT&n=BYTES (at most 1 GiB)", http.StatusBadRequest)
		return
	}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	buf := make([]byte, bulkChunk)
	start := time.Now()
	var sent int64
	for sent < n {
		k := min(int64(len(buf)), n-sent)
		m, err := c.Write(buf[:k])
		sent += int64(m)
		if err != nil {
			break
		}
	}
	c.Close()
	fmt.Fprintf(w, "%d %d\n", sent, time.Since(start).Nanoseconds())
}

// threads answers a line "TID VOLUNTARY INVOLUNTARY TICKS" for each of the
// process's threads: its context switches and its CPU time (user and
// system, USER_HZ ticks), from /proc/self/task, for the host to compare
// where two guests' switches go (cmd/netbench/host -threads).
func threads(w http.ResponseWriter, r *http.Request) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	for _, e := range ents {
		st, err1 := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		sa, err2 := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err1 != nil || err2 != nil {
			continue // the thread exited
		}
		var vol, invol string
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
				vol = strings.TrimSpace(v)
			} else if v, ok := strings.CutPrefix(l, "nonvoluntary_ctxt_switches:"); ok {
				invol = strings.TrimSpace(v)
			}
		}
		// The fields after the command's closing parenthesis: state is
		// field 3, utime and stime 14 and 15.
		var ticks uint64
		if i := strings.LastIndexByte(string(sa), ')'); i >= 0 {
			if f := strings.Fields(string(sa[i+1:])); len(f) > 12 {
				u, _ := strconv.ParseUint(f[11], 10, 64)
				s, _ := strconv.ParseUint(f[12], 10, 64)
				ticks = u + s
			}
		}
		fmt.Fprintf(&b, "%s %s %s %d\n", e.Name(), vol, invol, ticks)
	}
	io.WriteString(w, b.String())
}
