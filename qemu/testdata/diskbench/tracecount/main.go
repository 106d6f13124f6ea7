// Command tracecount says what each diskbench variant asked of the disk,
// from one boot's console log (diskbench run with -mark) and QEMU's trace
// of the disk's requests on that boot (linuxref's -qemu "-trace
// virtio_blk_handle_read -trace virtio_blk_handle_write -trace
// virtio_blk_req_complete", kept in <side>-N.stderr). The trace is split
// at each marker read; per variant it prints the read and write requests
// (and their KiB), the other requests (completions that were neither:
// flushes, and any device-id or discard request) and each per operation
// of the variant.
//
//	go run ./qemu/testdata/diskbench/tracecount CONSOLE.log TRACE.stderr
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

var (
	markRe  = regexp.MustCompile(`diskbench: mark (\d+) (\S+) sector (\d+)`)
	benchRe = regexp.MustCompile(`^Benchmark(\S+)-\d+\s+(\d+)\s`)
	reqRe   = regexp.MustCompile(`(virtio_blk_handle_read|virtio_blk_handle_write|virtio_blk_req_complete)\b.*?(?:sector (\d+) nsectors (\d+))?$`)
)

type phase struct {
	name                string
	ops                 int
	reads, writes, done int
	readSect, writeSect int64
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: tracecount CONSOLE.log TRACE.stderr")
		os.Exit(2)
	}
	phases := []*phase{{name: "(boot, mount)"}}
	bySector := map[int64]int{}
	ops := map[string]int{}
	err := lines(os.Args[1], func(l string) {
		if m := markRe.FindStringSubmatch(l); m != nil {
			s, _ := strconv.ParseInt(m[3], 10, 64)
			bySector[s] = len(phases)
			phases = append(phases, &phase{name: m[2]})
		} else if m := benchRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			ops[m[1]], _ = strconv.Atoi(m[2])
		}
	})
	if err != nil {
		fail(err)
	}
	if len(phases) == 1 {
		fail(fmt.Errorf("%s: no marks (diskbench -mark)", os.Args[1]))
	}
	cur := phases[0]
	err = lines(os.Args[2], func(l string) {
		m := reqRe.FindStringSubmatch(l)
		if m == nil {
			return
		}
		sector, _ := strconv.ParseInt(m[2], 10, 64)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		switch m[1] {
		case "virtio_blk_handle_read":
			if i, ok := bySector[sector]; ok && m[2] != "" {
				cur = phases[i]
				cur.done-- // the marker's own completion
				return
			}
			cur.reads++
			cur.readSect += n
		case "virtio_blk_handle_write":
			cur.writes++
			cur.writeSect += n
		default:
			cur.done++
		}
	})
	if err != nil {
		fail(err)
	}
	fmt.Printf("%-28s %7s %8s %9s %8s %9s %7s   %s\n", "variant", "ops", "reads", "read KiB", "writes", "write KiB", "other", "per op: reads, writes, write KiB, other")
	for _, p := range phases {
		other := p.done - p.reads - p.writes
		fmt.Printf("%-28s %7d %8d %9d %8d %9d %7d", p.name, ops[p.name], p.reads, p.readSect/2, p.writes, p.writeSect/2, other)
		if o := ops[p.name]; o > 0 {
			f := float64(o)
			fmt.Printf("   %.2f, %.2f, %.1f, %.2f", float64(p.reads)/f, float64(p.writes)/f, float64(p.writeSect)/2/f, float64(other)/f)
		}
		fmt.Println()
	}
}

func lines(path string, f func(string)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f(strings.TrimRight(sc.Text(), "\r"))
	}
	return sc.Err()
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "tracecount: %v\n", err)
	os.Exit(1)
}
