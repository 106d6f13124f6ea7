package main

// The device's request counts where the system publishes them (Linux's
// /sys/dev/block/MAJ:MIN/stat; sysfs is mounted here if /init did not):
// what each benchmark asked of the disk. yolk has no sysfs: nothing.

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

var sysfsTried bool

// devStats is the stat line of the device holding dir, "" if unknown.
func devStats(dir string) string {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return ""
	}
	p := fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev))
	if _, err := os.Stat(p); err != nil && !sysfsTried {
		sysfsTried = true
		os.MkdirAll("/sys", 0o755)
		unix.Mount("sysfs", "/sys", "sysfs", 0, "")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// diffStats says what happened between two stat lines: read and write
// requests with their KiB, flush requests (Documentation/block/stat.rst:
// fields 1, 3, 5, 7 and 16, counting from 1).
func diffStats(a, b string) string {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) < 17 || len(y) < 17 {
		return "(short stat line)"
	}
	d := func(i int) uint64 {
		u, _ := strconv.ParseUint(x[i], 10, 64)
		v, _ := strconv.ParseUint(y[i], 10, 64)
		return v - u
	}
	return fmt.Sprintf("reads %d (%d KiB) writes %d (%d KiB) flushes %d", d(0), d(2)/2, d(4), d(6)/2, d(15))
}
