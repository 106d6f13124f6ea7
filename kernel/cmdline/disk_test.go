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
	var l Disks
	l.Add([]byte("LABEL=Data-1.x_y:/srv:ro"))
	l.Add([]byte("LABEL=0123456789abcdef:/a"))
	if lb, ok := l.D[0].Label(); l.N != 2 || l.Bad || !ok || string(lb) != "Data-1.x_y" || !l.D[0].ReadOnly || string(l.D[0].Path()) != "/srv" {
		t.Errorf("by label: %d disks, bad %v, label %q %v", l.N, l.Bad, lb, ok)
	}
	if _, ok := d.D[0].Label(); ok {
		t.Error("vda has a label")
	}
	for _, v := range []string{"", "vda", "vda:", "vda:rel", ":/x", "VDA:/x", "v/a:/x",
		"LABEL=:/x", "LABEL=a b:/x", "LABEL=0123456789abcdefg:/x", "vdaaaaaaaaaaaaaaaa:/x", "Label=x:/x"} {
		var b Disks
		b.Add([]byte(v))
		if !b.Bad || b.N != 0 {
			t.Errorf("%q accepted", v)
		}
	}
	var r Disks
	r.Add([]byte("vdb:/data"))
	r.AddRoot([]byte("LABEL=root:ro"))
	r.Add([]byte("vdc:/")) // a second root
	r.AddRoot([]byte("vda:/x"))
	if r.N != 2 || !r.Bad || r.Root() != 1 || string(r.D[1].Name()) != "LABEL=root" || !r.D[1].ReadOnly || string(r.D[1].Path()) != "/" {
		t.Errorf("root: %d disks, bad %v, root %d", r.N, r.Bad, r.Root())
	}
	var r2 Disks
	if r2.Add([]byte("vda:/")); r2.Root() != 0 || r2.Bad || r2.D[0].ReadOnly {
		t.Errorf("vda:/: root %d, bad %v", r2.Root(), r2.Bad)
	}
	var full Disks
	for i := 0; i <= MaxDisks; i++ {
		full.Add([]byte("vda:/x"))
	}
	if full.N != MaxDisks || !full.Bad {
		t.Errorf("%d disks kept, bad %v", full.N, full.Bad)
	}
}
