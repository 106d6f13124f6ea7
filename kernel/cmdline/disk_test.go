package cmdline

import "testing"

func TestDisks(t *testing.T) {
	var d Disks
	for _, v := range []string{"vda:/mnt/disk0", "vdb:/data:ro", "nvme0n1:/mnt/disk2"} {
		d.Add([]byte(v))
	}
	if d.N != 3 || d.Bad {
		t.Fatalf("%d disks, bad %v", d.N, d.Bad)
	}
	for i, w := range []struct {
		name, path string
		ro         bool
	}{{"vda", "/mnt/disk0", false}, {"vdb", "/data", true}, {"nvme0n1", "/mnt/disk2", false}} {
		if g := &d.D[i]; string(g.Name()) != w.name || string(g.Path()) != w.path || g.ReadOnly != w.ro {
			t.Errorf("disk %d: %q %q %v, want %+v", i, g.Name(), g.Path(), g.ReadOnly, w)
		}
	}
	for _, v := range []string{"", "vda", "vda:", "vda:rel", ":/x", "VDA:/x", "v/a:/x", "vda:/"} {
		var b Disks
		b.Add([]byte(v))
		if !b.Bad || b.N != 0 {
			t.Errorf("%q accepted", v)
		}
	}
	var full Disks
	for i := 0; i <= MaxDisks; i++ {
		full.Add([]byte("vda:/x"))
	}
	if full.N != MaxDisks || !full.Bad {
		t.Errorf("%d disks kept, bad %v", full.N, full.Bad)
	}
}
