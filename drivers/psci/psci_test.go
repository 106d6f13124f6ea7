//go:build !arm64

package psci

import (
	"fmt"
	"testing"
)

func last() string {
	if len(firmware.calls) == 0 {
		return "none"
	}
	return fmt.Sprintf("%#x", firmware.calls[len(firmware.calls)-1])
}

func TestCalls(t *testing.T) {
	firmware.calls = nil
	Init(ConduitNone)
	if s := SystemOff(); s != NoConduit || len(firmware.calls) != 0 {
		t.Errorf("without a conduit: %v, %d calls", s, len(firmware.calls))
	}

	Init(ConduitHVC)
	firmware.ret = 0x10001 // 1.1
	if maj, min, s := Version(); maj != 1 || min != 1 || s != Success {
		t.Errorf("Version = %d.%d %v", maj, min, s)
	}
	if got := last(); got != "[0x0 0x84000000 0x0 0x0 0x0]" {
		t.Errorf("PSCI_VERSION call %s", got)
	}

	firmware.ret = uint64(0xFFFFFFFC) // -4 in the low 32 bits, as SMC32 firmware returns it
	if s := CPUOn(0x0100, 0x40081000, 7); s != AlreadyOn {
		t.Errorf("CPUOn = %v", s)
	}
	if got := last(); got != "[0x0 0xc4000003 0x100 0x40081000 0x7]" {
		t.Errorf("CPU_ON call %s", got)
	}

	Init(ConduitSMC)
	firmware.ret = 0
	SystemOff()
	if got := last(); got != "[0x1 0x84000008 0x0 0x0 0x0]" {
		t.Errorf("SYSTEM_OFF over SMC: %s", got)
	}
	SystemReset()
	if got := last(); got != "[0x1 0x84000009 0x0 0x0 0x0]" {
		t.Errorf("SYSTEM_RESET: %s", got)
	}
	firmware.ret = 1
	if st, s := AffinityInfo(3); st != AffinityOff || s != Success {
		t.Errorf("AffinityInfo = %d %v", st, s)
	}
	if got := last(); got != "[0x1 0xc4000004 0x3 0x0 0x0]" {
		t.Errorf("AFFINITY_INFO: %s", got)
	}
	firmware.ret = ^uint64(0) // -1
	if _, _, s := Version(); s != NotSupported {
		t.Errorf("Version failing: %v", s)
	}
	if NotPresent.String() != "not present" || Status(-77).String() != "unknown PSCI status" {
		t.Error("Status strings")
	}
}
