// Package virtio is the virtio 1.x transport every virtio device driver of
// the kernel stands on (virtio-net first, then 9p, block and entropy): split
// virtqueues in memory the caller provides (ring.go), and a Device that
// negotiates features, sets up and notifies queues, reads and acknowledges
// the interrupt status and reads the device-specific configuration over
// either transport — virtio-mmio version 2 (QEMU virt and microvm; mmio.go)
// or modern virtio over PCI with its vendor capabilities in BARs (pc and
// q35; pci.go, with a minimal PCI configuration-space layer: ECAM, or the
// ports 0xCF8/0xCFC on amd64). The virtio 1.1 specification is the
// reference; section numbers in comments are its.
//
// What it does not do: device logic (the net and 9p drivers own their
// queues' buffers and headers), interrupt routing (the caller finds the
// line and calls Interrupt from its handler), PCI resource assignment (BARs
// firmware left unassigned are an error), legacy or transitional-legacy
// interfaces (virtio-mmio version 1 and the PCI I/O-port interface are
// refused), packed virtqueues, indirect descriptors and MSI-X.
//
// Kernel-context: no allocation, no write barriers, no runtime scheduler
// calls, no Go pointers stored anywhere. Addresses are uintptr (virtual, for
// the CPU) or uint64 (physical, for the device); queue state is a
// pointer-free Queue value; results are small Error codes, not Go errors.
// Registers are reached through package mmio (hosted tests replace the
// accessors with models). Ring fields the device and driver both touch are
// read and written with sync/atomic (the idx words, flags and event
// indices), so that the compiler neither reorders nor splits them and the
// CPU orders them against the descriptor and ring entries around them: on
// amd64 a store is XCHG, on arm64 STLR, a load LDAR. A Queue is not locked:
// one CPU at a time adds to it and one (maybe another) harvests it only if
// the caller serialises the two, as the device drivers will with their own
// lock.
package virtio

// Error is the outcome of an operation; OK is zero. It is a small code, not
// a Go error, so that returning one allocates nothing.
type Error uint8

const (
	OK                 Error = iota
	ErrMagic                 // virtio-mmio: no "virt" magic at the address
	ErrLegacy                // virtio-mmio version 1 (QEMU microvm's default; -global virtio-mmio.force-legacy=false gives version 2)
	ErrVersion               // virtio-mmio: a version other than 1 or 2
	ErrNoDevice              // virtio-mmio: device ID 0, an empty slot; PCI: no function there
	ErrNotVirtio             // PCI: not a virtio device (vendor 0x1AF4, device 0x1000-0x107F)
	ErrNoVersion1            // the device does not offer VIRTIO_F_VERSION_1
	ErrFeaturesRefused       // FEATURES_OK did not stay set: the device refused the features written
	ErrResetTimeout          // the status did not read 0 after a reset
	ErrNoQueue               // the queue does not exist (maximum size 0)
	ErrQueueInUse            // the queue is already enabled
	ErrQueueSize             // size not a power of two in [2, 32768], or above the device's maximum
	ErrQueueAlign            // queue memory not 16-byte aligned (virtual or physical)
	ErrNotifyRange           // PCI: the queue's notify address lies outside the notify structure
	ErrChain                 // Add: an empty chain, more out buffers than buffers, or 4 GiB or more in total
	ErrFull                  // Add: fewer free descriptors than the chain needs
	ErrBroken                // the device returned a bad used entry; the queue is unusable until reset
	ErrNoCapList             // PCI: the status register says there is no capability list
	ErrCapList               // PCI: a capability pointer out of range, a loop, or a truncated structure
	ErrNoCommon              // PCI: no COMMON_CFG capability (or one too short)
	ErrNoNotify              // PCI: no NOTIFY_CFG capability (or one too short)
	ErrNoISR                 // PCI: no ISR_CFG capability
	ErrIOBAR                 // PCI: a virtio structure is in an I/O BAR
	ErrBARUnassigned         // PCI: a BAR holding a virtio structure has address 0 (no firmware assigned it)
	ErrBARRange              // PCI: a structure runs past 2^64, or a 64-bit BAR in slot 5
	ErrTooMany               // more functions than the caller's array; the count is still exact
	ErrBARLimit              // PCI: a virtio structure lies beyond what the kernel maps (and no window to move it into)
	ErrBARWindow             // PCI: a BAR does not fit in what is left of the bridge's window
	ErrNoIRQ                 // PCI: no interrupt line (firmware set none) and no MSI-X
	ErrNoMSIX                // PCI: no MSI-X capability, or its table outside a memory BAR
	ErrMSIXVector            // PCI: the device refused the MSI-X vector for a queue
	errCount
)

var errText = [...]string{
	OK:                 "ok",
	ErrMagic:           "virtio-mmio: bad magic",
	ErrLegacy:          "virtio-mmio: legacy version 1 device (QEMU: -global virtio-mmio.force-legacy=false)",
	ErrVersion:         "virtio-mmio: unknown version",
	ErrNoDevice:        "no device",
	ErrNotVirtio:       "not a virtio device",
	ErrNoVersion1:      "device does not offer VIRTIO_F_VERSION_1",
	ErrFeaturesRefused: "device refused the features (FEATURES_OK cleared)",
	ErrResetTimeout:    "device did not reset",
	ErrNoQueue:         "no such queue",
	ErrQueueInUse:      "queue already enabled",
	ErrQueueSize:       "bad queue size",
	ErrQueueAlign:      "queue memory not 16-byte aligned",
	ErrNotifyRange:     "queue notify address outside the notify structure",
	ErrChain:           "bad descriptor chain",
	ErrFull:            "not enough free descriptors",
	ErrBroken:          "device returned a bad used entry",
	ErrNoCapList:       "PCI: no capability list",
	ErrCapList:         "PCI: malformed capability list",
	ErrNoCommon:        "PCI: no virtio common configuration",
	ErrNoNotify:        "PCI: no virtio notify structure",
	ErrNoISR:           "PCI: no virtio ISR structure",
	ErrIOBAR:           "PCI: virtio structure in an I/O BAR",
	ErrBARUnassigned:   "PCI: BAR not assigned (no firmware set it up)",
	ErrBARRange:        "PCI: bad BAR",
	ErrTooMany:         "more entries than fit",
	ErrBARLimit:        "PCI: BAR beyond the kernel's physical map",
	ErrBARWindow:       "PCI: BAR does not fit in the bridge's window",
	ErrNoIRQ:           "PCI: no interrupt line (firmware set none)",
	ErrNoMSIX:          "PCI: no usable MSI-X capability",
	ErrMSIXVector:      "PCI: device refused the MSI-X vector",
}

func (e Error) String() string {
	if e < errCount {
		return errText[e]
	}
	return "unknown virtio error"
}

// Device status bits (§2.1).
const (
	StatusAcknowledge = 1
	StatusDriver      = 2
	StatusDriverOK    = 4
	StatusFeaturesOK  = 8
	StatusNeedsReset  = 64
	StatusFailed      = 128
)

// Feature bits of the transport and rings (§6); device types define bits
// 0-23.
const (
	FIndirectDesc     = 1 << 28 // VIRTIO_F_INDIRECT_DESC (not used here)
	FEventIdx         = 1 << 29 // VIRTIO_F_EVENT_IDX
	FVersion1         = 1 << 32 // VIRTIO_F_VERSION_1
	FAccessPlatform   = 1 << 33 // VIRTIO_F_ACCESS_PLATFORM
	FRingPacked       = 1 << 34 // VIRTIO_F_RING_PACKED (not used here)
	FInOrder          = 1 << 35 // VIRTIO_F_IN_ORDER
	FNotificationData = 1 << 38 // VIRTIO_F_NOTIFICATION_DATA (not used here)
)

// Device types (§5).
const (
	TypeNet     = 1
	TypeBlock   = 2
	TypeConsole = 3
	TypeEntropy = 4
	Type9P      = 9
)

// Interrupt status bits (ISR, §4.1.4.5, §4.2.2 InterruptStatus).
const (
	IntUsed   = 1 // a used buffer notification: harvest the queues
	IntConfig = 2 // the device configuration changed
)
