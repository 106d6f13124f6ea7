package procfs

// meminfo's labels, in Linux 6.x's order (fs/proc/meminfo.c,
// hugetlb_report_meminfo, x86's arch_report_meminfo).
var memNames = [NumMem]string{
	"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached",
	"Active", "Inactive", "Active(anon)", "Inactive(anon)", "Active(file)",
	"Inactive(file)", "Unevictable", "Mlocked", "SwapTotal", "SwapFree",
	"Zswap", "Zswapped", "Dirty", "Writeback", "AnonPages", "Mapped", "Shmem",
	"KReclaimable", "Slab", "SReclaimable", "SUnreclaim", "KernelStack",
	"PageTables", "SecPageTables", "NFS_Unstable", "Bounce", "WritebackTmp",
	"CommitLimit", "Committed_AS", "VmallocTotal", "VmallocUsed",
	"VmallocChunk", "Percpu", "AnonHugePages", "ShmemHugePages",
	"ShmemPmdMapped", "FileHugePages", "FilePmdMapped", "Balloon",
	"HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp",
	"Hugepagesize", "Hugetlb", "DirectMap4k", "DirectMap2M", "DirectMap1G",
}

// meminfo is /proc/meminfo: "Name:" padded to 16 columns, the kB
// right-aligned in 8 (show_val_kb); the huge page counts in 5 after 19.
func meminfo(o *out, s *Snapshot) {
	for i := 0; i < NumMem; i++ {
		if i >= MemDirectMap4k && s.Arch != ArchAMD64 {
			break
		}
		name := memNames[i]
		o.str(name)
		o.ch(':')
		if i >= MemHugePagesTotal && i <= MemHugePagesSurp {
			o.spaces(18 - len(name))
			o.decw(s.Mem[i], 5)
			o.ch('\n')
			continue
		}
		o.spaces(15 - len(name))
		o.decw(s.Mem[i]>>10, 8)
		o.str(" kB\n")
	}
}

// cpuLine writes one cpu line of /proc/stat: ten times in USER_HZ ticks.
func cpuLine(o *out, c *CPU) {
	for _, v := range [...]uint64{c.User, c.Nice, c.System, c.Idle, c.IOWait, c.IRQ, c.SoftIRQ, c.Steal} {
		o.ch(' ')
		o.dec(ticks(v))
	}
	o.str(" 0 0\n") // guest, guest_nice
}

// stat is /proc/stat, as show_stat.
func stat(o *out, s *Snapshot) {
	var sum CPU
	n := int(s.NumCPU)
	if n > len(s.CPUs) {
		n = len(s.CPUs)
	}
	for i := 0; i < n; i++ {
		c := &s.CPUs[i]
		sum.User += c.User
		sum.Nice += c.Nice
		sum.System += c.System
		sum.Idle += c.Idle
		sum.IOWait += c.IOWait
		sum.IRQ += c.IRQ
		sum.SoftIRQ += c.SoftIRQ
		sum.Steal += c.Steal
	}
	o.str("cpu ")
	cpuLine(o, &sum)
	for i := 0; i < n; i++ {
		o.str("cpu")
		o.dec(uint64(i))
		cpuLine(o, &s.CPUs[i])
	}
	var irqs uint64
	for i := 0; i < int(s.NumIRQs) && i < len(s.IRQs); i++ {
		irqs += s.IRQs[i]
	}
	o.str("intr ")
	o.dec(irqs)
	for i := 0; i < int(s.NumIRQs) && i < len(s.IRQs); i++ {
		o.ch(' ')
		o.dec(s.IRQs[i])
	}
	o.str("\nctxt ")
	o.dec(s.Ctxt)
	o.str("\nbtime ")
	o.sdec(s.BootTime)
	o.str("\nprocesses ")
	o.dec(s.Forks)
	o.str("\nprocs_running ")
	o.dec(uint64(s.Running))
	o.str("\nprocs_blocked ")
	o.dec(uint64(s.Blocked))
	o.str("\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
}
