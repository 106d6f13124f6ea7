// Package tsc finds the time-stamp counter's rate at boot (Calibrate:
// from kvmclock or CPUID, else measured against the PIT, the HPET, the
// ACPI PM timer or the CMOS clock), checks that the CPUs' counters agree
// and corrects what IA32_TSC_ADJUST can; it is amd64's (arm64's counter
// is architectural).
//
// The monotonic clock and the vDSO read the TSC of whatever CPU they run
// on, so time.Now is monotonic across CPUs only if
// the CPUs' TSCs agree. At boot the boot CPU measures each AP's offset by
// ping-pong through one cache line: it reads its TSC (t0), asks, the AP
// answers with its own TSC (t1), it reads again (t2); the AP's offset is
// t1 - (t0+t2)/2, known to within ±(t2-t0)/2, and the round with the
// shortest round trip is kept. An offset beyond that uncertainty is
// corrected with IA32_TSC_ADJUST where the CPU has it. The TSCs count as
// synchronised only when every offset is within an uncertainty of at most
// 10 µs; if an offset remains, or a probe could not get that tight (under
// emulation on a busy host a round trip can take a host time slice), the
// vDSO is turned off and clock_gettime never returns less than it returned
// before, on any CPU, so time never goes backwards either way.

// Kernel context: it runs in the boot's barrier, on the boot CPU and the
// APs spinning there; nothing allocates. The kernel supplies the clock,
// the wake-up of an AP and the fatal stop through Env.
package tsc
