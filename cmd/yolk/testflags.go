package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"yolk/qemu"
)

// What yolk test does with each go test flag (README's table): passed to
// the test binary, to the build (go test -c), to the guest, taken by yolk
// test itself, or refused with a reason.
type flagKind int

const (
	testBool   flagKind = iota // -test.NAME=BOOL to the test binary
	testValue                  // -test.NAME=VALUE to the test binary
	buildBool                  // -NAME[=BOOL] to go test -c (and go vet)
	buildValue                 // -NAME=VALUE to go test -c (and go vet)
	guestValue                 // configures QEMU
	ownBool                    // yolk test's own: -c, -json, -artifacts
	ownValue                   // yolk test's own: -o, -p, -vet, -timeout, -bench, -list, -outputdir
	fileValue                  // a file the test binary writes, left on the host (testout.go)
)

var testFlags = map[string]flagKind{
	"benchmem": testBool, "failfast": testBool, "fullpath": testBool, "short": testBool, "v": testBool,
	"benchtime": testValue, "count": testValue, "cpu": testValue, "parallel": testValue, "run": testValue,
	"skip": testValue, "shuffle": testValue, "fuzztime": testValue, "fuzzminimizetime": testValue,
	"memprofilerate": testValue, "blockprofilerate": testValue, "mutexprofilefraction": testValue,

	"a": buildBool, "trimpath": buildBool, "cover": buildBool, "modcacherw": buildBool, "x": buildBool, "work": buildBool,
	"tags": buildValue, "ldflags": buildValue, "gcflags": buildValue, "asmflags": buildValue, "covermode": buildValue,
	"coverpkg": buildValue, "mod": buildValue, "modfile": buildValue, "pgo": buildValue, "buildvcs": buildValue,
	"installsuffix": buildValue, "pkgdir": buildValue, "toolexec": buildValue, "compiler": buildValue,
	"debug-actiongraph": buildValue, "debug-runtime-trace": buildValue, "debug-trace": buildValue,

	"arch": guestValue, "accel": guestValue, "machine": guestValue, "m": guestValue, "smp": guestValue, "e": guestValue, "disk": guestValue,

	"coverprofile": fileValue, "cpuprofile": fileValue, "memprofile": fileValue, "blockprofile": fileValue,
	"mutexprofile": fileValue, "trace": fileValue, "outputdir": ownValue, "artifacts": ownBool,

	"c": ownBool, "json": ownBool, "C": ownValue,
	"o": ownValue, "p": ownValue, "vet": ownValue, "timeout": ownValue, "bench": ownValue, "list": ownValue,
}

// refusedFlags are go test's flags yolk test does not take, and why.
var refusedFlags = map[string]string{
	"race":       "needs cgo (ThreadSanitizer's C runtime); yolk images are built with CGO_ENABLED=0",
	"msan":       "needs cgo (MemorySanitizer's C runtime); yolk images are built with CGO_ENABLED=0",
	"asan":       "needs cgo (AddressSanitizer's C runtime); yolk images are built with CGO_ENABLED=0",
	"fuzz":       "the fuzzing engine runs worker processes (fork and exec), which the kernel does not have",
	"exec":       "yolk test is the -exec: the test binary runs in QEMU",
	"n":          "prints go's commands without running them; yolk test has no dry run",
	"buildmode":  "the kernel links only the default static executable",
	"linkshared": "the kernel links only the default static executable",
	"gccgoflags": "yolk images are built with the gc toolchain",
	"overlay":    "yolk test links the kernel in with its own -overlay",
}

// testConfig is a parsed yolk test command line.
type testConfig struct {
	patterns   []string
	testArgs   []string // for the test binary: -test.X flags, then what follows -args
	buildFlags []string // for go test -c and go vet, except -ldflags
	ldflags    string
	tags       string
	verbose    bool
	bench      bool
	list       bool
	failfast   bool
	cover      bool
	json       bool
	artifacts  bool              // -artifacts: the tests' artifacts go to the output directory
	files      map[string]string // go test's output-file flags (-cpuprofile ...): name to file as given
	outputDir  string            // -outputdir as given; "" is the working directory
	coverMode  string            // -covermode; "" is set
	coverPkg   string            // -coverpkg's patterns, "" without
	compile    bool              // -c: write the image, do not boot it
	output     string            // -o
	chdir      string            // -C: the directory to run in
	procs      int               // -p: packages built and booted at once
	vet        []string          // go vet's analyzer flags; empty: all of them
	vetOff     bool
	timeout    time.Duration // the test binary's -test.timeout; 0: none
	arch       string
	accel      string
	machine    string
	mem        string
	smp        int
	env        []string
	disks      qemu.DiskFlag // -disk FILE[,if=virtio|nvme][,ro][:GUESTPATH], as yolk run's
}

// The analyzers go test's vet runs by default (cmd/go's defaultVetFlags).
var defaultVet = []string{"-atomic", "-bool", "-buildtags", "-directive", "-errorsas", "-ifaceassert",
	"-nilfunc", "-printf", "-slog", "-stringintconv", "-tests"}

// testMemory is the guest's memory unless -m says otherwise: enough that
// a suite a host with gigabytes passes does not fail for want of it (a
// database's tests hold a 2 GiB value; the kernel refuses a mapping
// larger than the machine's memory, as Linux's heuristic overcommit
// does). QEMU backs guest memory as the guest touches it, so the pages a
// test leaves alone cost the host nothing, nor the boot any time (the
// README has the numbers). Every machine yolk test boots takes it, part
// of it above 4 GiB (microvm, pc, q35; virt's RAM starts at 1 GiB).
const testMemory = "4G"

// parseTestArgs parses yolk test's command line. Flags and package patterns
// may be mixed, as for go test; everything after -args goes to the test
// binary unchanged.
func parseTestArgs(args []string) (*testConfig, error) {
	c := &testConfig{timeout: 10 * time.Minute, accel: "auto", mem: testMemory, smp: 1, procs: runtime.GOMAXPROCS(0), vet: defaultVet}
	var pass []string
	for i := 0; i < len(args); i++ {
		a, at := args[i], i
		if a == "-args" || a == "--args" {
			pass = args[i+1:]
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			c.patterns = append(c.patterns, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.TrimPrefix(name, "test.")
		if why, ok := refusedFlags[name]; ok {
			return nil, fmt.Errorf("-%s is not supported: %s", name, why)
		}
		kind, ok := testFlags[name]
		if !ok {
			return nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if kind == testBool || kind == buildBool || kind == ownBool {
			on := true
			if hasVal {
				b, err := strconv.ParseBool(val)
				if err != nil {
					return nil, fmt.Errorf("invalid boolean value %q for -%s", val, name)
				}
				on = b
			}
			switch kind {
			case testBool:
				c.testArgs = append(c.testArgs, fmt.Sprintf("-test.%s=%t", name, on))
			case buildBool:
				c.buildFlags = append(c.buildFlags, fmt.Sprintf("-%s=%t", name, on))
			}
			switch name {
			case "v":
				c.verbose = on
			case "failfast":
				c.failfast = on
			case "cover":
				c.cover = on
			case "c":
				c.compile = on
			case "json":
				c.json = on
			case "artifacts":
				c.artifacts = on
			}
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			val = args[i]
		}
		switch kind {
		case fileValue:
			if val == "" {
				continue // go test's rule: an empty name asks for no file
			}
			if c.files == nil {
				c.files = map[string]string{}
			}
			c.files[name] = val
			if name == "coverprofile" {
				c.cover = true
				c.buildFlags = append(c.buildFlags, "-cover=true")
			}
			continue
		case testValue:
			c.testArgs = append(c.testArgs, "-test."+name+"="+val)
			continue
		case buildValue:
			switch name {
			case "ldflags":
				c.ldflags = val
			case "tags":
				c.tags = val
				c.buildFlags = append(c.buildFlags, "-tags="+val)
			case "compiler":
				if val != "gc" {
					return nil, fmt.Errorf("-compiler %s is not supported: yolk images are built with the gc toolchain", val)
				}
			case "covermode", "coverpkg":
				c.cover = true
				if name == "covermode" {
					c.coverMode = val
				} else {
					c.coverPkg = val
				}
				c.buildFlags = append(c.buildFlags, "-"+name+"="+val)
			default:
				c.buildFlags = append(c.buildFlags, "-"+name+"="+val)
			}
			continue
		}
		switch name {
		case "timeout":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("invalid value %q for -timeout: want a duration such as 10m", val)
			}
			c.timeout = d
		case "bench":
			c.bench = val != ""
			c.testArgs = append(c.testArgs, "-test.bench="+val)
		case "list":
			c.list = val != ""
			c.testArgs = append(c.testArgs, "-test.list="+val)
		case "o":
			c.output = val
		case "outputdir":
			c.outputDir = val
		case "C":
			if at != 0 {
				return nil, errors.New("-C must be the first flag")
			}
			c.chdir = val
		case "p":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-p %s: want a number of packages, at least 1", val)
			}
			c.procs = n
		case "vet":
			v, off, err := parseVet(val)
			if err != nil {
				return nil, err
			}
			c.vet, c.vetOff = v, off
		case "arch":
			c.arch = val
		case "accel":
			c.accel = val
		case "machine":
			c.machine = val
		case "m":
			c.mem = val
		case "smp":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > qemu.MaxCPUs {
				return nil, fmt.Errorf("-smp %s: the kernel runs 1 to %d CPUs", val, qemu.MaxCPUs)
			}
			c.smp = n
		case "e":
			var e envFlag
			if err := e.Set(val); err != nil {
				return nil, fmt.Errorf("-e %s: %v", val, err)
			}
			c.env = append(c.env, val)
		case "disk":
			if err := c.disks.Set(val); err != nil {
				return nil, fmt.Errorf("-disk: %v", err)
			}
		}
	}
	if c.json {
		// go test -json runs the binary with -test.v=test2json, which
		// frames its output for the converter.
		c.testArgs = append(withoutPrefix(c.testArgs, "-test.v="), "-test.v=test2json")
	}
	// go test always passes these two.
	c.testArgs = append(c.testArgs, "-test.paniconexit0", "-test.timeout="+c.timeout.String())
	c.testArgs = append(c.testArgs, pass...)
	arch, err := targetArch(c.arch)
	if err != nil {
		return nil, err
	}
	c.arch = arch
	if c.machine == "" {
		c.machine = qemu.MachinesFor(arch)[0]
	}
	if other := qemu.ArchOfMachine(c.machine); other != arch {
		return nil, fmt.Errorf("-machine %s: want one of %s for %s", c.machine, strings.Join(qemu.MachinesFor(arch), ", "), arch)
	}
	return c, nil
}

// withoutPrefix returns args without the elements that start with prefix.
func withoutPrefix(args []string, prefix string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, prefix) {
			out = append(out, a)
		}
	}
	return out
}

// parseVet parses -vet as go test does: "off", "all" (go vet's every
// analyzer: no flags) or a comma-separated list of analyzers; "" is go
// test's default set.
func parseVet(v string) (flags []string, off bool, err error) {
	switch {
	case v == "":
		return defaultVet, false, nil
	case v == "off":
		return nil, true, nil
	case v == "all":
		return nil, false, nil
	case strings.ContainsAny(v, "= "):
		return nil, false, errors.New("-vet argument is a comma-separated list of analyzers, off or all")
	}
	for _, a := range strings.Split(v, ",") {
		if a == "" || a == "off" || a == "all" {
			return nil, false, fmt.Errorf("-vet=%s: off and all stand alone; empty names are not analyzers", v)
		}
		flags = append(flags, "-"+a)
	}
	return flags, false, nil
}

// imagePath is where -c, -o and the profile flags put package pkg's test
// image (go test's rules: NAME.test in the working directory with -c or a
// profile flag alone; -o names a file or, ending in a slash or naming a
// directory, the directory for NAME.test). "" when the image goes to a
// temporary file.
func (c *testConfig) imagePath(name string, many bool) (string, error) {
	if c.output == "" {
		if c.compile || c.needBinary() {
			return name + ".test", nil
		}
		return "", nil
	}
	if st, err := os.Stat(c.output); (err == nil && st.IsDir()) || strings.HasSuffix(c.output, "/") {
		return filepath.Join(c.output, name+".test"), nil
	}
	if many {
		return "", errors.New("with multiple packages, -o must name a directory")
	}
	return c.output, nil
}
