package procfs_test

import "yolk/arch/amd64"

// hostCPUID is the CPUID instruction, which runs in user mode.
var hostCPUID = amd64.Cpuid
