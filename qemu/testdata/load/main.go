// Command load is the guest of qemu/load_test.go (issue 33's load from
// the network): a Go HTTP server on port 8080 with the standard
// library's defaults (no timeouts: slow clients hold their connections
// as long as they like), which the host loads with idle connections,
// slow writers and slow readers while it polls /health.
//
//	/health  "ok"
//	/stats   the program's open descriptors and the kernel's pools:
//	         "fds N sockets S pages P free F" (with ?gc=1 after a
//	         collection that gives the heap's free pages back; with
//	         ?fds=1 N is /proc/self/fd's count, else the server's
//	         connections plus the descriptors it holds at rest)
//	/diag    the network service's counters (netsvc.Diag)
//	/big     16 MiB, for slow readers
//	/quit    ends the program
//	/debug/pprof/profile?seconds=N  a CPU profile of the next N seconds
//	         (net/http/pprof's: the load tests' YOLK_LOAD_PROFILE)
//
// At start it checks accept4 on a full descriptor table over loopback:
// EMFILE, the connection stays queued, and once a descriptor is free
// accept takes it with its bytes ("load: emfile ok").
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"unsafe"

	"yolk/kernel/abi"
	"yolk/netsvc"
)

// The kernel's counters (abi.SysStats) are a private call only images
// that ask for them have.
func init() { abi.TestCalls = true }

// open is the connections the server holds (http.Server.ConnState);
// /stats without ?fds=1 counts descriptors as fdsIdle plus those.
var open atomic.Int64

const fdsIdle = 10 // the console's 3, the runtime's epoll and eventfds, the service's, the listener, as /proc/self/fd lists them

func main() {
	if err := emfile(); err != nil {
		fmt.Println("load: emfile FAIL:", err)
	} else {
		fmt.Println("load: emfile ok")
	}
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") != "" {
			runtime.GC()
			debug.FreeOSMemory()
		}
		if r.URL.Query().Get("fds") == "" {
			// Cheap: the connections the server holds, the kernel's
			// counters (listing /proc/self/fd walks every descriptor).
			var s abi.Stats
			syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0)
			fmt.Fprintf(w, "fds %d sockets %d pages %d free %d\n", open.Load()+fdsIdle, s.Sockets, s.SocketPages, s.FramesFree)
			return
		}
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var s abi.Stats
		if _, _, e := syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0); e != 0 {
			http.Error(w, e.Error(), 500)
			return
		}
		fmt.Fprintf(w, "fds %d sockets %d pages %d free %d\n", len(ents), s.Sockets, s.SocketPages, s.FramesFree)
	})
	mux.HandleFunc("/diag", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, netsvc.Diag()) })
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 16; i++ {
			if _, err := w.Write(big); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/quit", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("bye\n"))
		w.(http.Flusher).Flush()
		fmt.Println("load: done")
		os.Exit(0)
	})
	ln, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Println("load: listen:", err)
		os.Exit(1)
	}
	fmt.Println("load: serving")
	srv := &http.Server{Handler: mux, ConnState: func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}}
	srv.Serve(ln)
}

// emfile: a connection queued on a loopback listener, the descriptor
// table filled with dups; accept4 says EMFILE and leaves the connection
// queued (Linux's do_accept takes the descriptor first); with one
// descriptor freed, accept4 returns it, its bytes there.
func emfile() error {
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(l)
	if err := syscall.Bind(l, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := syscall.Listen(l, 8); err != nil {
		return err
	}
	sa, err := syscall.Getsockname(l)
	if err != nil {
		return err
	}
	c, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(c)
	if err := syscall.Connect(c, sa); err != nil {
		return err
	}
	if _, err := syscall.Write(c, []byte("hello")); err != nil {
		return err
	}
	var dups []int
	defer func() {
		for _, d := range dups {
			syscall.Close(d)
		}
	}()
	for {
		d, err := syscall.Dup(c)
		if err == syscall.EMFILE {
			break
		}
		if err != nil {
			return fmt.Errorf("dup %d: %v", len(dups), err)
		}
		dups = append(dups, d)
	}
	if _, _, err := syscall.Accept4(l, syscall.SOCK_CLOEXEC); err != syscall.EMFILE {
		return fmt.Errorf("accept4 with %d descriptors open: %v, want EMFILE", len(dups)+4, err)
	}
	syscall.Close(dups[len(dups)-1])
	dups = dups[:len(dups)-1]
	a, _, err := syscall.Accept4(l, syscall.SOCK_CLOEXEC)
	if err != nil {
		return fmt.Errorf("accept4 once a descriptor was free: %v, want the queued connection", err)
	}
	defer syscall.Close(a)
	buf := make([]byte, 16)
	n, err := syscall.Read(a, buf)
	if err != nil || string(buf[:n]) != "hello" {
		return fmt.Errorf("read on the accepted connection = %q, %v", buf[:n], err)
	}
	return nil
}
