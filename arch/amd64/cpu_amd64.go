package amd64

// Port I/O.
func Outb(port uint16, v uint8)
func Inb(port uint16) uint8
func Outl(port uint16, v uint32)
func Inl(port uint16) uint32
func Outw(port uint16, v uint16)
func Inw(port uint16) uint16

// MSRs.
func Rdmsr(msr uint32) uint64
func Wrmsr(msr uint32, v uint64)

// Cpuid executes CPUID with EAX=leaf, ECX=sub.
func Cpuid(leaf, sub uint32) (a, b, c, d uint32)

// Control registers.
func CR2() uintptr
func CR3() uintptr
func SetCR3(v uintptr)
func CR4() uintptr
func SetCR4(v uintptr)

// Xsetbv writes extended control register xcr (0: XCR0, the state
// components XSAVE manages and the OS has enabled); CR4.OSXSAVE first.
func Xsetbv(xcr uint32, v uint64)

// Rdtsc reads the time-stamp counter.
func Rdtsc() uint64

// Rdrand returns a hardware random value, ok=false if the DRNG had none.
func Rdrand() (v uint64, ok bool)

// Lgdt, Lidt load descriptor-table registers from a 10-byte pseudo-descriptor.
func Lgdt(desc uintptr)
func Lidt(desc uintptr)

// Ltr loads the task register.
func Ltr(sel uint16)

// Invlpg invalidates the TLB entry of one page.
func Invlpg(addr uintptr)

// FlushTLB invalidates every non-global TLB entry (reloads CR3).
func FlushTLB()

// Interrupt flag and halting.
func Cli()
func Hlt()

// StiHlt enables interrupts and halts in one step (STI's one-instruction
// shadow means no interrupt is taken between the two), then disables them
// again after the wake-up interrupt has been handled.
func StiHlt()

// IntsOn reports whether maskable interrupts are enabled (RFLAGS.IF).
func IntsOn() bool

// Pause is the spin-loop hint.
func Pause()

// MSR numbers used by the kernel.
const (
	MSR_STAR       = 0xC0000081
	MSR_LSTAR      = 0xC0000082
	MSR_FMASK      = 0xC0000084
	MSR_FS_BASE    = 0xC0000100
	MSR_GS_BASE    = 0xC0000101
	MSR_APIC_BASE  = 0x1B
	MSR_TSC_ADJUST = 0x3B
)
