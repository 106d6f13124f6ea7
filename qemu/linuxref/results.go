package linuxref

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ResultDir is where a run's results go: <out>/<machine> with one CPU (as
// before -smp existed), <out>/<machine>-smp<N> with N CPUs, so runs with
// different CPU counts never mix in one benchstat input. The Makefile's
// linuxref target spells the same rule.
func ResultDir(out, machine string, smp int) string {
	if smp > 1 {
		machine = fmt.Sprintf("%s-smp%d", machine, smp)
	}
	return filepath.Join(out, machine)
}

// Procs returns the distinct GOMAXPROCS values, ascending, that the -N
// suffixes of benchmark names show. A name without such a suffix counts as
// 1, which is what package testing means when it leaves the suffix off (so
// a sub-benchmark name that itself ends in -digits is ambiguous, as it is
// for benchstat).
func Procs(names []string) []int {
	var procs []int
	for _, n := range names {
		p := 1
		if i := strings.LastIndexByte(n, '-'); i >= 0 {
			if v, err := strconv.Atoi(n[i+1:]); err == nil && v > 0 {
				p = v
			}
		}
		if !slices.Contains(procs, p) {
			procs = append(procs, p)
		}
	}
	slices.Sort(procs)
	return procs
}
