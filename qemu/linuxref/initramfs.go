package linuxref

import (
	"io"
	"regexp"
	"strings"
)

// Paths in the initramfs that the guest init (cmd/linuxinit) reads.
const (
	ProgramPath = "/program"           // the program /init executes
	ModuleOrder = "/lib/modules/order" // module file names, one a line, in load order
)

// WriteInitramfs writes a newc archive holding init as /init (mode 0755),
// prog as /program, the modules as /lib/modules/NAME.ko with their load
// order in /lib/modules/order (only when there are modules), and the
// /dev/console node (5:1) that Linux opens as init's standard input, output
// and error.
func WriteInitramfs(w io.Writer, init, prog []byte, mods []Module) error {
	c := NewCPIOWriter(w)
	c.Dir("dev", 0o755)
	c.CharDev("dev/console", 0o600, 5, 1)
	c.File("init", 0o755, init)
	c.File(ProgramPath, 0o755, prog)
	if len(mods) > 0 {
		c.Dir("lib", 0o755)
		c.Dir("lib/modules", 0o755)
		var order strings.Builder
		for _, m := range mods {
			c.File("lib/modules/"+m.Name+".ko", 0o644, m.Data)
			order.WriteString(m.Name + ".ko\n")
		}
		c.File(ModuleOrder, 0o644, []byte(order.String()))
	}
	return c.Close()
}

var (
	benchLineRe  = regexp.MustCompile(`^(Benchmark\S+)\s+\d+\s+\d+(\.\d+)? ns/op(\s|$)`)
	configLineRe = regexp.MustCompile(`^(goos|goarch|pkg|cpu): \S`)
)

// BenchLines returns the lines of a console log that benchstat reads: Go
// benchmark result lines and the goos/goarch/pkg/cpu configuration lines.
// Kernel messages and everything else are dropped; so is a benchmark line
// that a kernel message broke apart, which the caller notices by its
// missing name. names lists the benchmark names in order.
func BenchLines(lines []string) (out, names []string) {
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if m := benchLineRe.FindStringSubmatch(l); m != nil {
			out = append(out, l)
			names = append(names, m[1])
		} else if configLineRe.MatchString(l) {
			out = append(out, l)
		}
	}
	return out, names
}
