package linuxref

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseModinfo(t *testing.T) {
	info := []byte("license=GPL\x00depends=9pnet,fscache,netfs\x00retpoline=Y\x00name=9p\x00vermagic=6.1.0-56-amd64 SMP mod_unload\x00")
	name, deps := parseModinfo(info)
	if name != "9p" || !slices.Equal(deps, []string{"9pnet", "fscache", "netfs"}) {
		t.Errorf("parseModinfo = %q, %q", name, deps)
	}
	if name, deps := parseModinfo([]byte("name=netfs\x00depends=\x00")); name != "netfs" || deps != nil {
		t.Errorf("no dependencies: %q, %q", name, deps)
	}
}

// TestModuleOrder: the dependencies of the 6.1 generic kernel's 9p
// modules, as their .modinfo sections give them.
func TestModuleOrder(t *testing.T) {
	graph := map[string][]string{
		"9p":                    {"9pnet", "fscache", "netfs"},
		"9pnet_virtio":          {"virtio", "9pnet", "virtio_ring"},
		"9pnet":                 nil,
		"netfs":                 nil,
		"fscache":               {"netfs"},
		"virtio_pci":            {"virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio"},
		"virtio_mmio":           {"virtio", "virtio_ring"},
		"virtio":                {"virtio_ring"},
		"virtio_ring":           nil,
		"virtio_pci_modern_dev": nil,
		"virtio_pci_legacy_dev": nil,
	}
	var asked []string
	deps := func(n string) ([]string, error) {
		asked = append(asked, n)
		d, ok := graph[n]
		if !ok {
			return nil, errors.New("no module " + n)
		}
		return d, nil
	}
	got, err := moduleOrder(ShareModules("pc"), deps)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio", "virtio_pci", "9pnet", "9pnet_virtio", "netfs", "fscache", "9p"}
	if !slices.Equal(got, want) {
		t.Errorf("order %q\nwant  %q", got, want)
	}
	if len(asked) != len(want) {
		t.Errorf("read %d modules' dependencies for %d modules: %q", len(asked), len(want), asked)
	}
	for i, m := range got {
		for _, d := range graph[m] {
			if slices.Index(got, d) > i {
				t.Errorf("%s loads before its dependency %s", m, d)
			}
		}
	}
	if got, _ := moduleOrder(ShareModules("microvm"), deps); got[2] != "virtio_mmio" || slices.Contains(got, "virtio_pci") {
		t.Errorf("microvm: %q", got)
	}
	graph["virtio_ring"] = []string{"9pnet_virtio"}
	if _, err := moduleOrder([]string{"9pnet_virtio"}, deps); err == nil || !strings.Contains(err.Error(), "cycle: 9pnet_virtio -> virtio -> virtio_ring -> 9pnet_virtio") {
		t.Errorf("a cycle: %v", err)
	}
	graph["virtio_ring"] = []string{"missing"}
	if _, err := moduleOrder([]string{"virtio"}, deps); err == nil || !strings.Contains(err.Error(), "no module missing") {
		t.Errorf("a missing module: %v", err)
	}
}

func TestModulesDir(t *testing.T) {
	if got := ModulesDir("/x/linux-image_6.1/boot/vmlinuz-6.1.0-56-amd64"); got != "/x/linux-image_6.1/lib/modules/6.1.0-56-amd64" {
		t.Errorf("ModulesDir = %q", got)
	}
}

// TestDiskModules: the disk's modules, on each bus, with crc32c_generic
// before ext4 (a softdep modinfo's depends= does not carry).
func TestDiskModules(t *testing.T) {
	if got := DiskModules("pc"); !slices.Equal(got, []string{"virtio_pci", "virtio_blk", "crc32c_generic", "ext4"}) {
		t.Errorf("pc: %q", got)
	}
	if got := DiskModules("microvm"); got[0] != "virtio_mmio" {
		t.Errorf("microvm: %q", got)
	}
}
