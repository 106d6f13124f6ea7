package linuxref

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Module is a kernel module for the initramfs: the guest init loads them
// in the order given, before it mounts the shares.
type Module struct {
	Name string // as in modinfo's name= ("9pnet_virtio")
	Data []byte // the .ko file
}

// ShareModules are the modules a 9p share needs on Linux, by machine: the
// file system and its virtio transport, and the machine's virtio bus
// (PCI on pc and q35, virtio-mmio on microvm and virt). Their dependencies
// (netfs, fscache, 9pnet, virtio, virtio_ring...) come with them.
func ShareModules(machine string) []string {
	bus := "virtio_pci"
	if machine == "microvm" || strings.HasPrefix(machine, "virt") {
		bus = "virtio_mmio"
	}
	return []string{bus, "9pnet_virtio", "9p"}
}

// DiskModules are the modules an ext4 disk needs on Linux, by machine:
// the machine's virtio bus, virtio_blk, crc32c_generic (ext4 and jbd2 ask
// for the crc32c algorithm by name when a file system has metadata_csum:
// a softdep, which modinfo's depends= does not list, and the initramfs has
// no modprobe to load it on demand) and ext4, whose dependencies (jbd2,
// mbcache, crc16) come with it.
func DiskModules(machine string) []string {
	return []string{ShareModules(machine)[0], "virtio_blk", "crc32c_generic", "ext4"}
}

// ModulesDir is the module tree of a kernel extracted from its Debian
// package: ROOT/boot/vmlinuz-VERSION has its modules in
// ROOT/lib/modules/VERSION.
func ModulesDir(kernel string) string {
	v := strings.TrimPrefix(filepath.Base(kernel), "vmlinuz-")
	return filepath.Join(filepath.Dir(filepath.Dir(kernel)), "lib", "modules", v)
}

// LoadModules reads the modules named by roots from the tree dir
// (lib/modules/VERSION) with everything they depend on, and returns them in
// an order that loads each after its dependencies. Debian's kernel packages
// carry no modules.dep (depmod writes it when the package is installed), so
// the dependencies are each module's own: the depends= entry modpost writes
// into its .modinfo section, from which depmod builds modules.dep.
func LoadModules(dir string, roots []string) ([]Module, error) {
	files := map[string]string{} // module name -> path
	err := filepath.WalkDir(filepath.Join(dir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name, ok := strings.CutSuffix(d.Name(), ".ko"); ok && !d.IsDir() {
			files[strings.ReplaceAll(name, "-", "_")] = p
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	deps := func(name string) ([]string, error) {
		p, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("no module %s in %s (not built as a module by this kernel: is it Debian's generic kernel, linux-image-amd64? the cloud kernel has no 9p)", name, dir)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		sec := f.Section(".modinfo")
		if sec == nil {
			return nil, fmt.Errorf("%s: no .modinfo section", p)
		}
		info, err := sec.Data()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		got, d := parseModinfo(info)
		if got != name {
			return nil, fmt.Errorf("%s: modinfo name %q, want %q", p, got, name)
		}
		data[name] = b
		return d, nil
	}
	order, err := moduleOrder(roots, deps)
	if err != nil {
		return nil, err
	}
	mods := make([]Module, len(order))
	for i, n := range order {
		mods[i] = Module{n, data[n]}
	}
	return mods, nil
}

// parseModinfo returns the name= and depends= entries of a .modinfo
// section: NUL-terminated KEY=VALUE strings, depends a comma-separated
// list (empty for none).
func parseModinfo(info []byte) (name string, deps []string) {
	for _, kv := range strings.Split(string(info), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "name":
			name = v
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d != "" {
					deps = append(deps, d)
				}
			}
		}
	}
	return name, deps
}

// moduleOrder lists roots and their dependencies (deps gives a module's)
// depth first, each after everything it depends on and once; a cycle is
// an error, as it is for modprobe.
func moduleOrder(roots []string, deps func(string) ([]string, error)) ([]string, error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var order []string
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("module dependency cycle: %s -> %s", strings.Join(path, " -> "), name)
		}
		state[name] = visiting
		ds, err := deps(name)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if err := visit(d, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = done
		order = append(order, name)
		return nil
	}
	for _, r := range roots {
		if err := visit(r, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}
