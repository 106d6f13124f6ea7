package gic

// GICv2 CPU interface registers (IHI 0048B 4.4).
const (
	giccCTLR = 0x00
	giccPMR  = 0x04
	giccBPR  = 0x08
	giccIAR  = 0x0C
	giccEOIR = 0x10
)

func initDistV2() Error {
	write32(dist+gicdCTLR, 0)
	readLines()
	// Route SPIs to the boot CPU: ITARGETSR0-7 are banked and read as
	// the calling CPU's own interface mask in every byte.
	bootTarget = Target(read32(dist+gicdITARGETSR) & 0xFF)
	if bootTarget == 0 {
		bootTarget = 1 // a uniprocessor GIC reads as zero
	}
	spis(0)
	for id := uint32(SPIBase); id < lines; id += 4 {
		write32(dist+gicdITARGETSR+uintptr(id), uint32(bootTarget)*0x01010101)
	}
	write32(dist+gicdCTLR, 1) // enable (Group 0; Group 1 in a non-secure view)
	return OK
}

// initCPUV2 sets up the calling CPU's banked distributor registers (SGIs
// and PPIs) and its CPU interface.
func initCPUV2() (CPU, Error) {
	t := Target(read32(dist+gicdITARGETSR) & 0xFF)
	if t == 0 {
		t = 1
	}
	write32(dist+gicdICENABLER, 0xFFFFFFFF)
	write32(dist+gicdICPENDR, 0xFFFFFFFF)
	write32(dist+gicdICACTIVER, 0xFFFFFFFF)
	write32(dist+gicdIGROUPR, 0)
	for id := uint32(0); id < SPIBase; id += 4 {
		write32(dist+gicdIPRIORITYR+uintptr(id), DefaultPriority*0x01010101)
	}
	write32(cpuif+giccPMR, 0xFF) // let every priority through
	write32(cpuif+giccBPR, 0)    // no subpriority: preemption by every priority bit
	write32(cpuif+giccCTLR, 1)   // enable; FIQEn 0, EOImode 0
	return CPU{Target: t}, OK
}

// SGIR is the GICD_SGIR value that sends SGI id to the CPUs in the
// interface mask t (TargetListFilter 0: the list).
func SGIR(t Target, id uint32) uint32 { return uint32(t&0xFF)<<16 | id&0xF }
