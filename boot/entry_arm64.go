package boot

// EntryPC returns the address of the arm64 entry (the ELF entry point the
// image tool writes).
func EntryPC() uintptr

// SecondaryPC returns the address where secondary CPUs start (PSCI
// CPU_ON's entry point); they receive their context in x0.
func SecondaryPC() uintptr

func entry()
func secondary()
func entryEL1()

// Board is the machine the arm64 entry code was entered for: BoardVirt
// through entry (the ELF entry point), BoardRPi3 through entryRPi3 (the
// first instruction of kernel8.img). The boot CPU sets it before any Go code.
var Board uint32

// Boards (board_arm64.h has the same numbers).
const (
	BoardVirt = 0
	BoardRPi3 = 1
)

// RPi3EntryPC returns the address of the Raspberry Pi 3 entry (kernel8.img
// branches there from its first word).
func RPi3EntryPC() uintptr

// RPi3SecondaryPC returns the address the Raspberry Pi's secondary CPUs
// are released to through the spin table.
func RPi3SecondaryPC() uintptr

func entryRPi3()
func secondaryRPi3()
