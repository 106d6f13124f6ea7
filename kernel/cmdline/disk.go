package cmdline

// The disks the host tool attached (docs/disks.md): one option each,
//
//	yolk.disk=NAME:GUESTPATH[:ro]
//	yolk.root=NAME[:ro]      (the same as yolk.disk=NAME:/[:ro])
//
// NAME the kernel's name of the block device (vda, vdb, … in the order
// of the virtio-blk devices; nvme0n1, … for NVMe) or LABEL=L, the disk
// whose ext4 file system has volume label L (at most 16 bytes of
// letters, digits, '.', '_' and '-': mkfs.ext4 -L), GUESTPATH the absolute
// path its file system is to be mounted on, ro a read-only mount. The
// table is read by the file systems' mount at boot (ext4, to come) and by
// the self-tests, which must find every disk named here.

// MaxDisks is how many yolk.disk options the table keeps.
const MaxDisks = 8

// Disk is one yolk.disk option.
type Disk struct {
	name     [len(labelPrefix) + 16]byte
	path     [256]byte
	nlen     uint8
	plen     uint16
	ReadOnly bool
}

// Name is the block device's name as given (LABEL=L for one by label);
// Path the guest path.
func (d *Disk) Name() []byte { return d.name[:d.nlen] }
func (d *Disk) Path() []byte { return d.path[:d.plen] }

// Label is the label of a disk named by its label, and true; false for
// one named by its device.
func (d *Disk) Label() ([]byte, bool) {
	n := d.Name()
	if len(n) > len(labelPrefix) && string(n[:len(labelPrefix)]) == labelPrefix {
		return n[len(labelPrefix):], true
	}
	return nil, false
}

const labelPrefix = "LABEL="

// Disks is the table of yolk.disk options, in command-line order.
type Disks struct {
	D   [MaxDisks]Disk
	N   int
	Bad bool // an option was malformed or did not fit (reported by the kernel)
}

// Add parses yolk.disk's value v into the table; a malformed one, or one
// past MaxDisks, only sets Bad. GUESTPATH "/" makes the disk the root,
// as yolk.root does.
func (t *Disks) Add(v []byte) {
	i := 0
	for i < len(v) && v[i] != ':' {
		i++
	}
	name, rest := v[:i], []byte(nil)
	if i < len(v) {
		rest = v[i+1:]
	}
	ro := false
	if n := len(rest); n >= 3 && string(rest[n-3:]) == ":ro" {
		rest, ro = rest[:n-3], true
	}
	t.add(name, rest, ro)
}

// AddRoot parses yolk.root's value, NAME[:ro] (NAME as yolk.disk's): the
// disk whose file system is the root, /.
func (t *Disks) AddRoot(v []byte) {
	ro := false
	if n := len(v); n >= 3 && string(v[n-3:]) == ":ro" {
		v, ro = v[:n-3], true
	}
	for _, c := range v {
		if c == ':' {
			t.Bad = true
			return
		}
	}
	t.add(v, slash[:], ro)
}

var slash = [...]byte{'/'}

// Root is the index of the disk that is the root, -1 if none.
func (t *Disks) Root() int {
	for i := 0; i < t.N; i++ {
		if p := t.D[i].Path(); len(p) == 1 {
			return i
		}
	}
	return -1
}

func (t *Disks) add(name, rest []byte, ro bool) {
	if t.N == MaxDisks || len(name) == 0 || len(name) > len(t.D[0].name) || len(rest) < 1 || rest[0] != '/' || len(rest) > len(t.D[0].path) ||
		len(rest) == 1 && t.Root() >= 0 {
		t.Bad = true
		return
	}
	label := len(name) > len(labelPrefix) && string(name[:len(labelPrefix)]) == labelPrefix
	cs := name
	if label {
		cs = name[len(labelPrefix):]
	}
	for _, c := range cs {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			label && (c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-')) {
			t.Bad = true
			return
		}
	}
	if !label && len(name) > 16 {
		t.Bad = true
		return
	}
	d := &t.D[t.N]
	d.nlen, d.plen = uint8(copy(d.name[:], name)), uint16(copy(d.path[:], rest))
	d.ReadOnly = ro
	t.N++
}
