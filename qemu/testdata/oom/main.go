// Command oom fills fresh anonymous memory, 16 MiB mapping after 16 MiB
// mapping, each backed on demand, until the machine has no frame left.
// Linux's OOM killer ends such a process with SIGKILL (status 137);
// TestOutOfMemory boots it on yolk with 128 MiB and checks the same. It
// never stops by itself: do not run it on the host. Two ways to fill:
//
//	oom        the program writes a byte to every page (its page faults)
//	oom read   read(2) from /dev/zero into the pages (the kernel's copy
//	           faults them in, inside the system call)
package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func main() {
	const chunk = 16 << 20 // each mapping: less than the machine has, as Linux's overcommit heuristic wants
	read := len(os.Args) > 1 && os.Args[1] == "read"
	zero := -1
	if read {
		var err error
		if zero, err = unix.Open("/dev/zero", unix.O_RDONLY, 0); err != nil {
			fmt.Println("oom: /dev/zero:", err)
			os.Exit(1)
		}
	}
	for total := 0; ; total += chunk {
		m, err := unix.Mmap(-1, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			fmt.Println("oom: mmap:", err)
			os.Exit(1)
		}
		for i := 0; i < chunk; {
			if !read {
				m[i] = 1
				i += 4096
				continue
			}
			n, err := unix.Read(zero, m[i:min(i+1<<20, chunk)])
			if err != nil || n <= 0 {
				fmt.Println("oom: read:", n, err)
				os.Exit(1)
			}
			i += n
		}
		fmt.Println("oom: filled", (total+chunk)>>20, "MiB")
	}
}
