// Command mapexit writes a file through two MAP_SHARED mappings and ends
// without msync or munmap, as TestShareMapExit runs it on the host and on
// yolk with the file on a share: Linux's page cache outlives the process
// and writes the pages back, so the file has the bytes afterwards.
//
//	mapexit FILE exit    os.Exit(3) (exit_group)
//	mapexit FILE signal  SIGTERM's default action (Go's runtime re-raises it)
//
// FILE is 3 pages and 100 bytes long. The first mapping covers its first
// two pages, the second the rest: the last page in part, and one byte
// written past the end, which must not reach the file.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mapexit FILE exit|signal")
		os.Exit(2)
	}
	f, err := os.OpenFile(os.Args[1], os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mapexit:", err)
		os.Exit(2)
	}
	const page = 4096
	m1, err := unix.Mmap(int(f.Fd()), 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mapexit: mmap:", err)
		os.Exit(2)
	}
	m2, err := unix.Mmap(int(f.Fd()), 2*page, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mapexit: mmap:", err)
		os.Exit(2)
	}
	f.Close() // the mappings outlive the descriptor
	m1[0], m1[page-1], m1[page+7] = 'A', 'B', 'C'
	m2[0], m2[page+99] = 'D', 'E'
	m2[page+100] = 'X' // past the end of the file
	fmt.Println("mapexit: written through the mappings")
	switch os.Args[2] {
	case "exit":
		os.Exit(3)
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(time.Minute)
	}
	os.Exit(2)
}
