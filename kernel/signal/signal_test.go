package signal

import (
	"encoding/binary"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
	"yolk/kernel/timer"
)

type hostEnv struct{}

var hostLock sync.Mutex

func (hostEnv) TimerDelivered(i int) (int32, int32, uint64) { return 7, 2, 0xfeed }
func (hostEnv) Lock()                                       { hostLock.Lock() }
func (hostEnv) Unlock()                                     { hostLock.Unlock() }

func TestSendTake(t *testing.T) {
	var s State[hostEnv]
	usr1, usr2, alrm := int(unix.SIGUSR1), int(unix.SIGUSR2), int(unix.SIGALRM)
	s.Acts[usr1].Handler, s.Acts[usr2].Handler, s.Acts[alrm].Handler = 0x1000, 0x1000, 0x1000
	if !s.Send(3, usr2, FromKill) || !s.Send(3, usr1, FromTkill) || !s.Send(3, alrm, FromTimer) {
		t.Fatal("a handled signal was not sent")
	}
	// A later kill does not take a pending timer signal's code.
	s.Send(3, alrm, FromKill)
	if !s.Unblocked(3) || s.Unblocked(2) {
		t.Fatal("Unblocked")
	}
	want := []struct {
		sig  int
		code int32
		info uintptr
		val  uint64
	}{
		{usr1, SITkill, 1, 0},
		{usr2, SIUser, 1, 0},
		{alrm, timer.SITimer, 7 | 2<<32, 0xfeed},
	}
	for _, w := range want {
		sig, src := s.Take(3, ^uint64(0))
		if sig != w.sig || src.Code != w.code || src.Info != w.info || src.Val != w.val || src.Timer != (sig == alrm) {
			t.Fatalf("took %d %+v, want %+v", sig, src, w)
		}
		var si [128]byte
		src.Put(si[:], sig)
		if binary.LittleEndian.Uint32(si[0:]) != uint32(sig) || int32(binary.LittleEndian.Uint32(si[8:])) != w.code ||
			binary.LittleEndian.Uint64(si[16:]) != uint64(w.info) || binary.LittleEndian.Uint64(si[24:]) != w.val {
			t.Fatalf("siginfo % x", si[:32])
		}
	}
	if sig, _ := s.Take(3, ^uint64(0)); sig != 0 || s.Unblocked(3) {
		t.Fatalf("took %d from an empty set", sig)
	}
	s.Send(3, alrm, FromKernel)
	if sig, src := s.Take(3, Bit(alrm)); sig != alrm || src.Code != SIKernel || src.Info != 0 {
		t.Fatalf("interval timer: %d %+v", sig, src)
	}
}

func TestIgnored(t *testing.T) {
	var s State[hostEnv]
	urg, term := int(unix.SIGURG), int(unix.SIGTERM)
	if s.Send(1, urg, FromKill) || s.Has(1, urg) {
		t.Fatal("SIGURG with SIG_DFL was not dropped")
	}
	if !s.Send(1, term, FromKill) || !s.Has(1, term) {
		t.Fatal("SIGTERM with SIG_DFL was dropped")
	}
	// Blocked, an ignored signal stays pending until its action
	// becomes to ignore it.
	s.Mask[1] = Bit(urg)
	if !s.Send(1, urg, FromKill) || !s.Has(1, urg) {
		t.Fatal("a blocked SIGURG was dropped")
	}
	old := s.SetAction(urg, Action{Handler: SigIgn}, true)
	if old != (Action{}) || s.Has(1, urg) || !s.Has(1, term) {
		t.Fatal("SIG_IGN did not discard exactly the pending SIGURG")
	}
	if got := s.SetAction(urg, Action{}, false); got.Handler != SigIgn {
		t.Fatalf("action %+v", got)
	}
	s.Discard(1, term)
	if s.Has(1, term) {
		t.Fatal("Discard")
	}
}

func TestMasks(t *testing.T) {
	var s State[hostEnv]
	kill := Bit(int(unix.SIGKILL))
	if _, e := s.Procmask(0, unix.SIG_BLOCK, 0b1100|kill, true); e != 0 || s.Mask[0] != 0b1100 {
		t.Fatalf("block: %#x %d", s.Mask[0], e)
	}
	if old, e := s.Procmask(0, unix.SIG_UNBLOCK, 0b100, true); e != 0 || old != 0b1100 || s.Mask[0] != 0b1000 {
		t.Fatalf("unblock: %#x", s.Mask[0])
	}
	if _, e := s.Procmask(0, 9, 1, true); e != abi.EINVAL || s.Mask[0] != 0b1000 {
		t.Fatal("a bad how changed the mask")
	}
	s.Init(5, 0)
	if s.Mask[5] != 0b1000 {
		t.Fatal("Init did not inherit the mask")
	}
	s.SetTempMask(5, 1|kill)
	if s.Mask[5] != 1 || s.FrameMask(5) != 0b1000 || s.RestoreMask(5) {
		t.Fatal("the frame's mask is the one the call replaced, and nothing is left to restore")
	}
	// The frame holds the mask from before; the handler's return puts
	// it back, not RestoreMask.
	s.SetTempMask(5, 2)
	if !s.RestoreMask(5) || s.Mask[5] != 1 || s.FrameMask(5) != 1 {
		t.Fatal("RestoreMask")
	}
	s.Handled(5, 1, Action{Mask: 0b100000 | kill})
	if s.Mask[5] != 0b100001 {
		t.Fatalf("handler mask %#b", s.Mask[5])
	}
	s.Handled(6, 2, Action{Flags: SaNodefer})
	if s.Mask[6] != 0 {
		t.Fatal("SA_NODEFER")
	}
}

func TestAltStack(t *testing.T) {
	var s State[hostEnv]
	if old, e := s.SetAltStack(2, StackT{SP: 0x1000, Size: 4096}, true); e != 0 || old.Flags != SsDisable {
		t.Fatalf("first: %+v %d", old, e)
	}
	if old, e := s.SetAltStack(2, StackT{SP: 0x9000, Size: 100}, true); e != abi.ENOMEM || old.SP != 0x1000 || old.Size != 4096 {
		t.Fatalf("too small: %+v %d", old, e)
	}
	if s.Alt[2] != (AltStack{0x1000, 4096}) {
		t.Fatal("ENOMEM changed the stack")
	}
	onstack := Action{Flags: SaOnstack}
	if as, top := s.Top(2, onstack, 0x500); as.SP != 0x1000 || top != 0x2000 {
		t.Fatalf("SA_ONSTACK: top %#x", top)
	}
	if _, top := s.Top(2, onstack, 0x1800); top != 0x1800 {
		t.Fatal("already on the alternate stack")
	}
	if _, top := s.Top(2, Action{}, 0x500); top != 0x500 {
		t.Fatal("without SA_ONSTACK")
	}
	if _, e := s.SetAltStack(2, StackT{Flags: SsDisable}, true); e != 0 || s.Alt[2] != (AltStack{}) {
		t.Fatal("SS_DISABLE")
	}
}
