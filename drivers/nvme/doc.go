// Package nvme is the NVMe driver (NVM Express base specification 1.4;
// section numbers in comments are its): one controller behind PCI, its
// registers in BAR0 (CAP, VS, CC, CSTS, AQA/ASQ/ACQ, the doorbells with
// CAP.DSTRD's stride), a reset and an enable bounded by CAP.TO, the
// admin queue, Identify Controller (serial and model numbers, MDTS, VWC,
// ONCS) and Identify Namespace (size, the LBA format in use), Set
// Features Number of Queues and an I/O queue pair per CPU where the
// controller grants them (fewer, shared, where it does not), and Read,
// Write, Flush and Dataset Management (deallocate) on the namespaces.
//
// Each queue has a fixed table of command slots; a command's identifier
// is its slot. A slot owns a PRP list page (the fixed pool: one page a
// slot, so a transfer of up to 513 pages needs no chained list) and
// bounce pages for RW, whose data are copied to and from the caller's
// memory through the environment's Copy (the program's memory, which
// another thread may unmap while a command waits); RWPhys moves data
// straight between the device and physically contiguous kernel memory.
// Completion is by interrupt (the kernel calls Interrupt from its
// handler: pin-based INTx, every completion queue on vector 0), with the
// phase bit telling new entries; a wait also polls the queue each
// PollEvery in case an interrupt was lost. A command not completed
// within Timeout is aborted (Abort on the admin queue) and ends in EIO
// with a line on the console; one that does not come back after its
// abort, or a controller whose CSTS.CFS is set, fails the controller:
// it is disabled (no more DMA), every command in flight and every later
// request ends in EIO.
//
// What it does not do: find the controller or route its interrupt (the
// kernel does, with package virtio's PCI configuration access), MSI or
// MSI-X, namespaces attached or resized after Open, a controller reset
// that brings queues back after a failure, metadata, protection
// information, fused commands, SGLs, multiple PRP list pages chained,
// block sizes other than 512 and 4096, or a memory page size other than
// 4 KiB (CAP.MPSMIN must allow it).
//
// Kernel-context: no heap allocation, no Go pointers stored (addresses
// are uintptr, device addresses uint64), no runtime scheduler calls, no
// fmt. Registers are reached through package mmio's 32-bit accesses
// (hosted tests replace the accessors with a model of the controller).
// Queue entries the controller writes are read with sync/atomic (the
// completion entry's phase word first, then the rest).
package nvme

// Error is the outcome of Open; OK is zero.
type Error uint8

const (
	OK             Error = iota
	ErrNoNVM             // CAP.CSS: the NVM command set is not supported
	ErrPageSize          // CAP.MPSMIN above 4 KiB
	ErrQueueSize         // CAP.MQES below 2 entries
	ErrResetTime         // CSTS.RDY did not clear within CAP.TO after CC.EN was cleared
	ErrEnableTime        // CSTS.RDY did not set within CAP.TO after CC.EN was set
	ErrFatal             // CSTS.CFS: the controller reported a fatal status
	ErrMemory            // the environment gave no page
	ErrIdentify          // Identify Controller failed or timed out
	ErrNoNamespace       // no active namespace with a usable LBA format
	ErrNoQueues          // no I/O queue pair could be created
	errCount
)

var errText = [...]string{
	OK:             "ok",
	ErrNoNVM:       "NVM command set not supported",
	ErrPageSize:    "controller's smallest memory page is above 4 KiB",
	ErrQueueSize:   "controller's queues hold fewer than 2 entries",
	ErrResetTime:   "controller did not reset within CAP.TO",
	ErrEnableTime:  "controller did not become ready within CAP.TO",
	ErrFatal:       "controller fatal status (CSTS.CFS)",
	ErrMemory:      "out of memory",
	ErrIdentify:    "Identify Controller failed",
	ErrNoNamespace: "no namespace with a 512- or 4096-byte LBA format",
	ErrNoQueues:    "no I/O queue could be created",
}

func (e Error) String() string {
	if e < errCount {
		return errText[e]
	}
	return "unknown NVMe error"
}

// Errno is a Linux error number; 0 is success.
type Errno uint32

const (
	EIO        Errno = 5
	EFAULT     Errno = 14
	EINVAL     Errno = 22
	ENODEV     Errno = 19
	EROFS      Errno = 30
	EOPNOTSUPP Errno = 95
)

// Controller registers (§3.1), offsets in BAR0. 64-bit registers are
// reached as two 32-bit halves, low first (§3.1: a host may do so).
const (
	regCAP   = 0x00 // 64: capabilities
	regVS    = 0x08 // 32: version
	regINTMS = 0x0c // 32: interrupt mask set (pin-based: bit 0)
	regINTMC = 0x10 // 32: interrupt mask clear
	regCC    = 0x14 // 32: configuration
	regCSTS  = 0x1c // 32: status
	regAQA   = 0x24 // 32: admin queue attributes
	regASQ   = 0x28 // 64: admin submission queue base
	regACQ   = 0x30 // 64: admin completion queue base
	regDB    = 0x1000

	// RegsSize is the register block through the first doorbells; the
	// caller maps BAR0 (its size, at least this) as device memory.
	RegsSize = 0x2000
)

// CC and CSTS bits (§3.1.5, §3.1.6).
const (
	ccEnable = 1 << 0
	ccIOSQES = 6 << 16 // 64-byte submission entries
	ccIOCQES = 4 << 20 // 16-byte completion entries
	cstsRDY  = 1 << 0
	cstsCFS  = 1 << 1
)

// Admin command opcodes (§5).
const (
	opDeleteSQ    = 0x00
	opCreateSQ    = 0x01
	opDeleteCQ    = 0x04
	opCreateCQ    = 0x05
	opIdentify    = 0x06
	opAbort       = 0x08
	opSetFeatures = 0x09

	cnsNamespace  = 0x00
	cnsController = 0x01

	featNumQueues = 0x07
)

// NVM command set opcodes (§6 of the NVM command set).
const (
	OpFlush = 0x00
	OpWrite = 0x01
	OpRead  = 0x02
	OpDSM   = 0x09
)

// Status code types and generic codes (§4.6.1.2).
const (
	scSuccess      = 0x00
	scInvalidOp    = 0x01
	scAbortRequest = 0x07 // the command was aborted by an Abort
	scLBARange     = 0x80
)

const (
	// MaxQueues is the most I/O queue pairs a controller gets.
	MaxQueues = 4
	// Slots is the command slots of an I/O queue: commands in flight
	// on it at once.
	Slots = 32
	// AdminSlots is the admin queue's.
	AdminSlots = 4
	// DataPages is each I/O slot's bounce buffer in pages: RW moves at
	// most this much a command (less if MDTS says).
	DataPages = 16
	// MaxNamespaces is the most namespaces a controller shows.
	MaxNamespaces = 4

	// ioEntries and adminEntries are the queues' sizes: more entries
	// than slots, so neither queue of a pair ever fills.
	ioEntries    = 64
	adminEntries = 8

	pageSize = 4096
	// prpEntries is one PRP list page's entries: with PRP1, a command
	// moves at most prpEntries+1 pages.
	prpEntries = pageSize / 8

	// DefaultTimeout bounds a command (Linux's nvme_io_timeout is 30 s).
	DefaultTimeout = 30e9
	// PollEvery is how often a waiting command looks at its queue
	// itself (a lost interrupt) and at CSTS.CFS.
	PollEvery = 1e9
	// abortWait bounds the wait for an aborted command to come back.
	abortWait = 2e9
)

// Mem gives the driver memory: whole zeroed pages. A type-parameter
// constraint, never an interface value.
type Mem interface {
	// Page returns a zeroed 4 KiB page: the CPU's address and the
	// device's; virt 0 when memory is exhausted.
	Page() (virt uintptr, phys uint64)
}

// Env is a controller's environment. A type-parameter constraint.
type Env interface {
	// Lock and Unlock guard queue q (0 the admin queue, 1... the I/O
	// queues): its entries, doorbells and slots. Interrupt takes them
	// too (the kernel runs it with interrupts off).
	Lock(q int)
	Unlock(q int)
	// Wait blocks while *addr == val, until the monotonic time deadline
	// (ns, 0: none); it reports whether the deadline passed. Before
	// tasks run (nothing to block on, no interrupt routed) it may
	// return true at once: the driver then polls its queue.
	Wait(addr *uint32, val uint32, deadline int64) (timedOut bool)
	// Wake wakes the waiters on addr.
	Wake(addr *uint32)
	// Now is the monotonic clock, ns.
	Now() int64
	// CPU is the current CPU's index (it picks the I/O queue).
	CPU() int
	// Copy copies n bytes from src to dst, one of them a caller's
	// buffer; false if that faulted.
	Copy(dst, src uintptr, n int) bool
	// Note starts a line on the console (with the kernel's prefix);
	// Log and LogDec go on with it (a line ends with "\n").
	Note(s string)
	Log(s string)
	LogDec(v int64)
}
