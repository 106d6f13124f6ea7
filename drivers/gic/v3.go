package gic

// GICv3 distributor and redistributor registers (IHI 0069H 12.9, 12.10,
// 12.11).
const (
	gicdCTLRRWP      = 1 << 31
	gicdCTLRAREns    = 1 << 4 // ARE (single security state) / ARE_NS
	gicdCTLRGrp1A    = 1 << 1 // EnableGrp1 (single) / EnableGrp1A (non-secure view)
	gicdCTLRGrp1orG0 = 1 << 0 // EnableGrp0 (single) / EnableGrp1 (non-secure view)

	gicrCTLR    = 0x0000
	gicrTYPER   = 0x0008 // 64 bits: affinity in 63:32, Last in bit 4, VLPIS in bit 1
	gicrWAKER   = 0x0014
	gicrSGIBase = 0x10000 // the second 64 KiB frame: SGI and PPI registers

	gicrCTLRRWP         = 1 << 3
	gicrTYPERLast       = 1 << 4
	gicrTYPERVLPIS      = 1 << 1
	gicrWAKERSleep      = 1 << 1 // ProcessorSleep
	gicrWAKERChildSleep = 1 << 2 // ChildrenAsleep

	// affMask keeps MPIDR's affinity fields (Aff3, Aff2, Aff1, Aff0).
	affMask = 0xFF_00FF_FFFF
)

// CPU interface system register values.
const (
	iccSRE      = 1 << 0 // ICC_SRE_ELx.SRE
	iccSREEL2   = 0xF    // ICC_SRE_EL2: SRE, DFB, DIB, Enable (EL1 may use SRE)
	iccIGRPEN1  = 1
	iccPMRAll   = 0xFF
	iccCTLRZero = 0 // EOImode 0: EOIR drops priority and deactivates
)

func initDistV3() Error {
	write32(dist+gicdCTLR, 0)
	if !waitDistRWP() {
		return ErrTimeout
	}
	readLines()
	bootTarget = Target(readMPIDR() & affMask)
	spis(0xFFFFFFFF) // Group 1
	for id := uint32(SPIBase); id < lines; id++ {
		write64(dist+gicdIROUTER+uintptr(id)*8, uint64(bootTarget))
	}
	write32(dist+gicdCTLR, gicdCTLRAREns|gicdCTLRGrp1A|gicdCTLRGrp1orG0)
	if !waitDistRWP() {
		return ErrTimeout
	}
	return OK
}

func waitDistRWP() bool {
	for i := 0; i < spin; i++ {
		if read32(dist+gicdCTLR)&gicdCTLRRWP == 0 {
			return true
		}
	}
	return false
}

// waitRWP waits for a write to a GICR_ICENABLER0 (SGI/PPI) or GICD
// register (SPI) to take effect.
func waitRWP(c CPU, id uint32) {
	if id >= SPIBase {
		waitDistRWP()
		return
	}
	for i := 0; i < spin && read32(c.rd+gicrCTLR)&gicrCTLRRWP != 0; i++ {
	}
}

// Affinity is the 32-bit affinity GICR_TYPER reports for MPIDR value
// mpidr: Aff3.Aff2.Aff1.Aff0.
func Affinity(mpidr uint64) uint32 {
	return uint32(mpidr>>32&0xFF)<<24 | uint32(mpidr&0xFFFFFF)
}

// findRedist walks the redistributor frames for the one whose affinity is
// the calling CPU's. Each is 128 KiB (RD_base and SGI_base), 256 KiB when
// it has the GICv4 virtual LPI frames.
func findRedist(aff uint32) uintptr {
	for rd := redist; redistEnd == 0 || rd < redistEnd; {
		typer := read64(rd + gicrTYPER)
		if uint32(typer>>32) == aff {
			return rd
		}
		if typer&gicrTYPERLast != 0 {
			return 0
		}
		if typer&gicrTYPERVLPIS != 0 {
			rd += 0x40000
		} else {
			rd += 0x20000
		}
	}
	return 0
}

func initCPUV3() (CPU, Error) {
	mpidr := readMPIDR()
	c := CPU{Target: Target(mpidr & affMask)}
	if c.rd = findRedist(Affinity(mpidr)); c.rd == 0 {
		return c, ErrNoRedist
	}
	// Wake the redistributor: clear ProcessorSleep, wait for
	// ChildrenAsleep to clear.
	write32(c.rd+gicrWAKER, read32(c.rd+gicrWAKER)&^gicrWAKERSleep)
	woke := false
	for i := 0; i < spin; i++ {
		if read32(c.rd+gicrWAKER)&gicrWAKERChildSleep == 0 {
			woke = true
			break
		}
	}
	if !woke {
		return c, ErrTimeout
	}
	sgi := c.rd + gicrSGIBase
	write32(sgi+gicdICENABLER, 0xFFFFFFFF)
	write32(sgi+gicdICPENDR, 0xFFFFFFFF)
	write32(sgi+gicdICACTIVER, 0xFFFFFFFF)
	write32(sgi+gicdIGROUPR, 0xFFFFFFFF) // Group 1
	for id := uint32(0); id < SPIBase; id += 4 {
		write32(sgi+gicdIPRIORITYR+uintptr(id), DefaultPriority*0x01010101)
	}
	write32(sgi+gicdICFGR+4, 0) // PPIs level-sensitive
	waitRWP(c, 0)

	writeSRE(readSRE() | iccSRE)
	if readSRE()&iccSRE == 0 {
		return c, ErrSRE
	}
	writePMR(iccPMRAll)
	writeBPR1(0)
	writeCTLR(iccCTLRZero)
	writeIGRPEN1(iccIGRPEN1)
	return c, OK
}

// SGI1R is the ICC_SGI1R_EL1 value that sends SGI id to the CPU with
// MPIDR affinity t: Aff3/Aff2/Aff1 select the cluster, the target list
// bit Aff0 mod 16 and the range selector Aff0 / 16 the CPU in it.
func SGI1R(t Target, id uint32) uint64 {
	aff0 := uint64(t) & 0xFF
	aff1 := uint64(t) >> 8 & 0xFF
	aff2 := uint64(t) >> 16 & 0xFF
	aff3 := uint64(t) >> 32 & 0xFF
	return aff3<<48 | aff0>>4<<44 | aff2<<32 | uint64(id&0xF)<<24 | aff1<<16 | 1<<(aff0&0xF)
}
