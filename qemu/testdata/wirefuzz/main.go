// Command wirefuzz is the guest of qemu/wirefuzz_test.go (issue 33's
// wire as an attacker, in the guest): it serves TCP and UDP echo on
// port 7 (dual stack: IPv4 and IPv6) through the network service while
// the host writes random and mutated frames into its tap link, and a
// control line service on TCP port 8080 for the host:
//
//	stats  "sockets S pages P free F" (the kernel's socket slots, the
//	       pages their rings hold, free frames: abi.Stats, after a
//	       collection)
//	diag   the connections the echo program accepted and holds, the
//	       kernel's pools, the network service's counters (netsvc.Diag)
//	probe  accept4s, without waiting, what the kernel's queue of the
//	       echo listener holds (after a health check went unanswered)
//	quit   closes the echo sockets and the control listener, answers
//	       "bye" and closes; then waits (up to 2 minutes) for the
//	       kernel's sockets and ring pages to come back to where they
//	       were before the program opened any, prints
//	       "wirefuzz: before ..." and "wirefuzz: after ..." and exits
//
// Nothing here sends anything the host did not ask for: it only
// answers.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"yolk/kernel/abi"
	"yolk/netsvc"
)

// The kernel's counters (abi.SysStats) are a private call only images
// that ask for them have.
func init() { abi.TestCalls = true }

func stats() abi.Stats {
	runtime.GC()
	debug.FreeOSMemory()
	var s abi.Stats
	syscall.Syscall(abi.SysStats, uintptr(unsafe.Pointer(&s)), 0, 0)
	return s
}

func line(s abi.Stats) string {
	return fmt.Sprintf("sockets %d pages %d free %d", s.Sockets, s.SocketPages, s.FramesFree)
}

func main() {
	before := stats()
	tl, err := net.Listen("tcp", ":7")
	if err != nil {
		fmt.Println("wirefuzz: listen tcp:", err)
		os.Exit(1)
	}
	uc, err := net.ListenPacket("udp", ":7")
	if err != nil {
		fmt.Println("wirefuzz: listen udp:", err)
		os.Exit(1)
	}
	cl, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Println("wirefuzz: listen control:", err)
		os.Exit(1)
	}
	var (
		mu       sync.Mutex
		conns    = map[net.Conn]bool{}
		wg       sync.WaitGroup
		accepted int
	)
	wg.Go(func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					fmt.Println("wirefuzz: accept:", err) // the program stops serving: the host's checks fail
				}
				return
			}
			mu.Lock()
			conns[c] = true
			accepted++
			mu.Unlock()
			go func() {
				io.Copy(c, c)
				c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	})
	wg.Go(func() {
		b := make([]byte, 65536)
		werrs := 0
		for {
			n, a, err := uc.ReadFrom(b)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					continue
				}
				return
			}
			if _, err := uc.WriteTo(b[:n], a); err != nil && werrs < 3 {
				werrs++
				fmt.Printf("wirefuzz: udp echo to %v: %v\n", a, err)
			}
		}
	})
	fmt.Println("wirefuzz: serving")
	for {
		c, err := cl.Accept()
		if err != nil {
			fmt.Println("wirefuzz: control accept:", err)
			os.Exit(1)
		}
		r := bufio.NewReader(c)
		quit := false
		for !quit {
			l, err := r.ReadString('\n')
			if err != nil {
				break
			}
			switch strings.TrimSpace(l) {
			case "stats":
				fmt.Fprintln(c, line(stats()))
			case "diag":
				mu.Lock()
				a, o := accepted, len(conns)
				mu.Unlock()
				fmt.Fprintf(c, "program: %d accepted, %d open; kernel: %s; %s\n", a, o, line(stats()), netsvc.Diag())
			case "probe":
				// The listener's queue as the kernel holds it: what a
				// non-blocking accept4 finds there that the program's
				// Accept (parked in the netpoller) did not get.
				fmt.Fprintln(c, probe(tl))
			case "quit":
				quit = true
			default:
				fmt.Fprintln(c, "?")
			}
		}
		if !quit {
			c.Close()
			continue
		}
		// The end: every socket the program opened closes; the
		// fuzzer's connections still open are closed too (the
		// connections of hosts that went silent: Linux would keep
		// them until their timeouts).
		tl.Close()
		uc.Close()
		cl.Close()
		mu.Lock()
		open := len(conns)
		for oc := range conns {
			oc.Close()
		}
		mu.Unlock()
		wg.Wait()
		fmt.Fprintln(c, "bye")
		c.Close()
		fmt.Printf("wirefuzz: closed the listeners and %d open connections\n", open)
		t0 := time.Now()
		var after abi.Stats
		for {
			after = stats()
			if after.Sockets == before.Sockets && after.SocketPages == before.SocketPages || time.Since(t0) > 2*time.Minute {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		fmt.Printf("wirefuzz: before %s\n", line(before))
		fmt.Printf("wirefuzz: after %s (in %v)\n", line(after), time.Since(t0).Round(time.Millisecond))
		fmt.Println("wirefuzz:", netsvc.Diag())
		fmt.Println("wirefuzz: done")
		os.Exit(0)
	}
}

// probe takes what the echo listener's queue holds with non-blocking
// accept4 calls on its descriptor (closing each), and says how many and
// what epoll says of the listener before.
func probe(l net.Listener) string {
	rc, err := l.(*net.TCPListener).SyscallConn()
	if err != nil {
		return err.Error()
	}
	var out string
	rc.Control(func(fd uintptr) {
		ep, err := syscall.EpollCreate1(0)
		ready := "?"
		if err == nil {
			syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, int(fd), &syscall.EpollEvent{Events: syscall.EPOLLIN})
			evs := make([]syscall.EpollEvent, 1)
			n, _ := syscall.EpollWait(ep, evs, 0)
			ready = fmt.Sprintf("%d ready (events %#x)", n, evs[0].Events)
			syscall.Close(ep)
		}
		k := 0
		var last error
		for ; k < 64; k++ {
			nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			if err != nil {
				last = err
				break
			}
			syscall.Close(nfd)
		}
		out = fmt.Sprintf("probe: a fresh epoll says %s; accept4 took %d queued connections (then %v)", ready, k, last)
	})
	return out
}
