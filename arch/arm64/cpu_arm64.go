package arm64

// WaitForInterrupt waits (WFI) with IRQs masked, then takes what is pending.
func WaitForInterrupt()

// TLBIPage drops va's translation on every CPU (TLBI VAE1IS).
func TLBIPage(va uintptr)

// TLBIAll drops every translation on every CPU (TLBI VMALLE1IS).
func TLBIAll()

// TLBILocal drops every translation on this CPU only.
func TLBILocal()

// TableSync makes page-table writes visible to the table walker (DSB, ISB).
func TableSync()

// MPIDR reads MPIDR_EL1, this CPU's affinity.
func MPIDR() uint64

// ISAR0 reads ID_AA64ISAR0_EL1, the instruction-set features.
func ISAR0() uint64

// SpinRelease stores entry at a spin-table slot, cleaned to memory, then SEV.
func SpinRelease(slot, entry uintptr)

// LoadAfterLoads is *p, loaded after every earlier load of this CPU (DMB
// ISHLD, then the load): a sequence count's re-check.
func LoadAfterLoads(p *uint32) uint32
