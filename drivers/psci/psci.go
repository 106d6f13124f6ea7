// Package psci calls the firmware's Power State Coordination Interface
// (Arm DEN 0022, version 0.2 and later function IDs): PSCI_VERSION,
// CPU_ON to start a secondary CPU, CPU_OFF, AFFINITY_INFO, SYSTEM_OFF and
// SYSTEM_RESET, through HVC or SMC as Init selects (the device tree's
// /psci "method": QEMU virt answers HVC when the guest starts at EL1 and
// SMC when it starts at EL2 with virtualization=on). It is our own:
// TamaGo's arm64 packages do not build with the stock Go toolchain.
//
// Under QEMU, SYSTEM_OFF ends QEMU with status 0 and SYSTEM_RESET resets
// the machine (or ends QEMU with -no-reboot); neither can carry a failure
// status (see package semihosting).
//
// Kernel-context: no allocation, no runtime calls; the conduit is an
// integer set once by Init, before the calls. A call follows the SMC
// Calling Convention: arguments in X0-X3, the result in X0; the firmware
// preserves X18-X30, which covers Go's g (R28) and frame pointer.
package psci

// Conduit is how calls reach the firmware (the same values as fdt.Conduit).
type Conduit uint8

const (
	ConduitNone Conduit = iota
	ConduitHVC
	ConduitSMC
)

// Function IDs (DEN 0022D, 5.1): the 64-bit (SMC64) forms where an
// argument is an address or an MPIDR.
const (
	fnVersion      = 0x84000000
	fnCPUOff       = 0x84000002
	fnCPUOn        = 0xC4000003
	fnAffinityInfo = 0xC4000004
	fnSystemOff    = 0x84000008
	fnSystemReset  = 0x84000009
)

// Status is a PSCI return code; Success is zero.
type Status int32

const (
	Success           Status = 0
	NotSupported      Status = -1
	InvalidParameters Status = -2
	Denied            Status = -3
	AlreadyOn         Status = -4
	OnPending         Status = -5
	InternalFailure   Status = -6
	NotPresent        Status = -7
	Disabled          Status = -8
	InvalidAddress    Status = -9
	// NoConduit is ours: Init was not called with HVC or SMC.
	NoConduit Status = -1000
)

func (s Status) String() string {
	switch s {
	case Success:
		return "success"
	case NotSupported:
		return "not supported"
	case InvalidParameters:
		return "invalid parameters"
	case Denied:
		return "denied"
	case AlreadyOn:
		return "already on"
	case OnPending:
		return "on pending"
	case InternalFailure:
		return "internal failure"
	case NotPresent:
		return "not present"
	case Disabled:
		return "disabled"
	case InvalidAddress:
		return "invalid address"
	case NoConduit:
		return "no PSCI conduit"
	}
	return "unknown PSCI status"
}

var conduit Conduit

// Init selects the conduit for every later call.
func Init(c Conduit) { conduit = c }

func invoke(fn, a1, a2, a3 uint64) uint64 {
	switch conduit {
	case ConduitHVC:
		return call(0, fn, a1, a2, a3)
	case ConduitSMC:
		return call(1, fn, a1, a2, a3)
	}
	n := int64(NoConduit)
	return uint64(n)
}

func status(r uint64) Status { return Status(int32(r)) }

// Version is the PSCI version the firmware implements (QEMU 7.2: 1.1).
func Version() (major, minor uint16, s Status) {
	r := invoke(fnVersion, 0, 0, 0)
	if int32(r) < 0 {
		return 0, 0, status(r)
	}
	return uint16(r >> 16), uint16(r), Success
}

// CPUOn starts the CPU whose MPIDR affinity is mpidr at physical address
// entry, at the exception level and in the state the caller runs at
// (MMU and caches off), with context in X0.
func CPUOn(mpidr uint64, entry uintptr, context uint64) Status {
	return status(invoke(fnCPUOn, mpidr, uint64(entry), context))
}

// CPUOff powers the calling CPU down; it returns only on failure.
func CPUOff() Status { return status(invoke(fnCPUOff, 0, 0, 0)) }

// Affinity states AffinityInfo returns.
const (
	AffinityOn        = 0
	AffinityOff       = 1
	AffinityOnPending = 2
)

// AffinityInfo is the state (AffinityOn, AffinityOff, AffinityOnPending)
// of the CPU with MPIDR affinity mpidr, or a negative Status.
func AffinityInfo(mpidr uint64) (int, Status) {
	r := int32(invoke(fnAffinityInfo, mpidr, 0, 0)) // lowest affinity level 0
	if r < 0 {
		return 0, Status(r)
	}
	return int(r), Success
}

// SystemOff powers the machine off; it returns only on failure.
func SystemOff() Status { return status(invoke(fnSystemOff, 0, 0, 0)) }

// SystemReset resets the machine; it returns only on failure.
func SystemReset() Status { return status(invoke(fnSystemReset, 0, 0, 0)) }
