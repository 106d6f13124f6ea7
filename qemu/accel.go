package qemu

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"yolk/qemu/image"
)

// ProbePackage is the main package booted to test whether KVM runs the
// kernel: it prints a line and exits 0.
const ProbePackage = "yolk/qemu/internal/probe"

// DefaultProbeTimeout bounds the KVM probe boot.
const DefaultProbeTimeout = 20 * time.Second

// AccelChoice is the accelerator chosen for a boot and the reason.
type AccelChoice struct {
	Accel  string // "kvm" or "tcg"
	Reason string
}

// String is the line the runner prints first, e.g.
// "yolk: accel tcg (kvm probe failed: timeout)".
func (a AccelChoice) String() string { return "yolk: accel " + a.Accel + " (" + a.Reason + ")" }

// AccelOptions control ChooseAccel.
type AccelOptions struct {
	Mode         string        // "auto" (or ""), "kvm" or "tcg"
	Arch         string        // the guest's architecture; default "amd64"
	Machine      string        // machine the probe boots; default the arch's first
	QEMU         string        // default FindQEMUFor(Arch)
	CacheDir     string        // verdict cache; default os.UserCacheDir()/yolk
	ProbeTimeout time.Duration // default DefaultProbeTimeout
	ProbeImage   string        // a prebuilt probe image; default: build ProbePackage
	KVMDevice    string        // default "/dev/kvm"
	Log          io.Writer     // the probe's serial output and QEMU's stderr; default discarded

	probeAccel string // tests only: boot the probe with this accelerator instead of kvm
}

// ChooseAccel picks the accelerator. "kvm" and "tcg" are taken as given
// ("forced"). "auto" chooses TCG without a probe for a guest of another
// architecture than the host's (an arm64 image on an amd64 host); otherwise
// it uses KVM only if the KVM device opens read-write and a probe boot (of
// ProbePackage built for the guest's architecture) under KVM reaches
// "yolk: exit 0" within the probe timeout; the verdict is cached per QEMU
// version, host kernel release, machine and probe image hash, so only the
// first run pays for the probe (a timeout is cached for every machine).
// The error is non-nil only for a bad mode or
// architecture or a missing QEMU.
func ChooseAccel(ctx context.Context, o AccelOptions) (AccelChoice, error) {
	switch o.Mode {
	case "kvm", "tcg":
		return AccelChoice{o.Mode, "forced"}, nil
	case "", "auto":
	default:
		return AccelChoice{}, fmt.Errorf("accelerator %q: want auto, kvm or tcg", o.Mode)
	}
	arch, err := image.CheckArch(o.Arch)
	if err != nil {
		return AccelChoice{}, err
	}
	o.Arch = arch
	if runtime.GOARCH != arch {
		// KVM runs only the host's own architecture: no probe.
		return AccelChoice{"tcg", fmt.Sprintf("an %s guest on an %s host: no KVM", arch, runtime.GOARCH)}, nil
	}
	if o.QEMU == "" {
		q, err := FindQEMUFor(arch)
		if err != nil {
			return AccelChoice{}, err
		}
		o.QEMU = q
	}
	if o.Machine == "" {
		o.Machine = MachinesFor(arch)[0]
	}
	if o.KVMDevice == "" {
		o.KVMDevice = "/dev/kvm"
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	kvm, err := os.OpenFile(o.KVMDevice, os.O_RDWR, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return AccelChoice{"tcg", fmt.Sprintf("no usable %s: %v", o.KVMDevice, err)}, nil
	}
	kvm.Close()

	probe := o.ProbeImage
	if probe == "" {
		tmp, err := os.MkdirTemp("", "yolk-probe-")
		if err != nil {
			return AccelChoice{"tcg", "kvm probe not run: " + err.Error()}, nil
		}
		defer os.RemoveAll(tmp)
		var errb bytes.Buffer
		_, err = image.Build(ctx, ProbePackage, image.Options{Output: filepath.Join(tmp, "probe.elf"), Arch: arch, Stderr: &errb})
		if err != nil {
			fmt.Fprintf(o.Log, "yolk: building the kvm probe: %v\n%s", err, errb.String())
			return AccelChoice{"tcg", "kvm probe image did not build: " + firstLine(err.Error())}, nil
		}
		probe = filepath.Join(tmp, "probe.elf")
	}
	key, err := probeKey(o.QEMU, o.Machine, probe)
	if err != nil {
		return AccelChoice{"tcg", "kvm probe not run: " + err.Error()}, nil
	}
	cache := o.CacheDir
	if cache == "" {
		if d, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(d, "yolk")
		}
	}
	// A probe that timed out holds for every machine of this QEMU, host
	// kernel and probe: a KVM that cannot run the probe on one machine
	// type (a nested hypervisor that runs no ring-0 guest, say) hangs on
	// the others too, and each would otherwise wait out its own timeout.
	hostKey, _ := probeKey(o.QEMU, anyMachine, probe)
	cacheFile, hostFile := "", ""
	if cache != "" {
		cacheFile = filepath.Join(cache, "kvm-probe-"+key)
		hostFile = filepath.Join(cache, "kvm-probe-"+hostKey)
		for _, f := range []string{cacheFile, hostFile} {
			if c, ok := readProbeCache(f); ok {
				return c, nil
			}
		}
	}

	choice, err := runProbe(ctx, o, probe)
	if err != nil {
		return AccelChoice{"tcg", "kvm probe not run: " + err.Error()}, nil
	}
	if cacheFile != "" && ctx.Err() == nil {
		b := []byte(choice.Accel + "\n" + choice.Reason + "\n")
		writeFileAtomic(cacheFile, b)
		if choice.Reason == probeTimedOut {
			writeFileAtomic(hostFile, b)
		}
	}
	return choice, nil
}

// anyMachine stands for the machine in the key of a verdict that holds
// for all of them.
const anyMachine = "any machine"

const probeTimedOut = "kvm probe failed: timeout"

// readProbeCache reads a cached verdict.
func readProbeCache(path string) (AccelChoice, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return AccelChoice{}, false
	}
	accel, reason, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if !ok || accel != "kvm" && accel != "tcg" {
		return AccelChoice{}, false
	}
	return AccelChoice{accel, reason + "; cached"}, true
}

func runProbe(ctx context.Context, o AccelOptions, probe string) (AccelChoice, error) {
	res, err := Run(ctx, Config{
		QEMU:    o.QEMU,
		Image:   probe,
		Machine: o.Machine,
		Accel:   cmp.Or(o.probeAccel, "kvm"),
		Timeout: o.ProbeTimeout,
		Stdout:  o.Log,
		Stderr:  o.Log,
	})
	if err != nil {
		return AccelChoice{}, err
	}
	switch {
	case res.TimedOut:
		return AccelChoice{"tcg", probeTimedOut}, nil
	case res.Marker && res.GuestExit == 0:
		return AccelChoice{"kvm", "kvm probe passed"}, nil
	case res.Marker:
		return AccelChoice{"tcg", fmt.Sprintf("kvm probe failed: exit %d", res.GuestExit)}, nil
	case len(res.Messages) > 0:
		return AccelChoice{"tcg", "kvm probe failed: " + strings.TrimPrefix(res.Messages[0], "yolk: ")}, nil
	}
	return AccelChoice{"tcg", fmt.Sprintf("kvm probe failed: QEMU status %d without an exit report", res.QEMUStatus)}, nil
}

// probeKey hashes what decides whether KVM runs the probe: the QEMU
// version, the host kernel release, the machine (anyMachine for a verdict
// that holds for all) and the probe image.
func probeKey(qemu, machine, probe string) (string, error) {
	ver, err := exec.Command(qemu, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", qemu, err)
	}
	img, err := os.ReadFile(probe)
	if err != nil {
		return "", err
	}
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	h := sha256.New()
	imgSum := sha256.Sum256(img)
	fmt.Fprintf(h, "qemu=%s\nkernel=%s\nmachine=%s\nprobe=%x\n",
		firstLine(string(ver)), strings.TrimSpace(string(rel)), machine, imgSum)
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func writeFileAtomic(path string, b []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil && cerr == nil {
		if os.Rename(f.Name(), path) == nil {
			return
		}
	}
	os.Remove(f.Name())
}
