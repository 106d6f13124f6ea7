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
	bootTarget = ownMask() // route SPIs to the boot CPU
	spis(0)
	for id := uint32(SPIBase); id < lines; id += 4 {
		write32(dist+gicdITARGETSR+uintptr(id), uint32(bootTarget)*0x01010101)
	}
	write32(dist+gicdCTLR, 1) // enable (Group 0; Group 1 in a non-secure view)
	return OK
}

// ownMask is the calling CPU's interface mask. ITARGETSR0-7 (IDs 0-31)
// are banked and read as it; the byte of ID 31 is used because older
// QEMU models answered the mask only for IDs 29-31. A uniprocessor GIC
// reads as zero (and ignores targets): then the mask is 1.
func ownMask() Target {
	if t := Target(read32(dist+gicdITARGETSR+28) >> 24); t != 0 {
		return t
	}
	return 1
}

// initCPUV2 sets up the calling CPU's banked distributor registers (SGIs
// and PPIs) and its CPU interface.
func initCPUV2() (CPU, Error) {
	t := ownMask()
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
