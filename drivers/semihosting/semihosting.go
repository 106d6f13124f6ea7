// Package semihosting makes Arm semihosting calls (Arm "Semihosting for
// AArch32 and AArch64", HLT #0xF000 with the operation in W0 and a
// parameter block's address in X1) to end QEMU with the status the kernel
// chooses. It is our own: TamaGo's arm64 packages do not build with the
// stock Go toolchain.
//
// On AArch64, SYS_EXIT (0x18) takes a two-word block: a reason and a
// subcode. QEMU (semihosting/arm-compat-semi.c) ends the process with
// exit(subcode) when the reason is ADP_Stopped_ApplicationExit (0x20026),
// so the host sees the subcode's low 8 bits as the exit status, and with
// exit(1) for any other reason. QEMU only honours the call with
// -semihosting (or -semihosting-config enable=on) and from EL1 or above
// (EL0 needs userspace=on); without it HLT is an undefined instruction,
// so the kernel calls Exit only when it was booted for QEMU with
// semihosting, and otherwise powers off through PSCI (status 0).
//
// Kernel-context: no allocation, no runtime calls; the parameter block
// lives on the assembly function's own frame.
package semihosting

// Operation numbers and exit reasons.
const (
	opExit = 0x18 // SYS_EXIT

	ApplicationExit     = 0x20026 // ADP_Stopped_ApplicationExit: the subcode is the status
	RunTimeErrorUnknown = 0x20023 // ADP_Stopped_RunTimeErrorUnknown: QEMU exits 1
)

// Exit ends QEMU with status code&0xFF. It returns only if the host did
// not end the machine (a debugger, or a semihosting implementation that
// resumes).
func Exit(code int) { exitCall(ApplicationExit, uint64(int64(code))) }

// ExitReason ends QEMU with an exit reason other than ApplicationExit (QEMU
// exits 1 for those).
func ExitReason(reason, subcode uint64) { exitCall(reason, subcode) }
