package image

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A flattened device tree writer (Devicetree Specification 0.4, chapter 5),
// for the small trees the board images carry.

// DTNode is a device-tree node: properties in order, then children.
type DTNode struct {
	Name     string
	Props    []DTProp
	Children []*DTNode
}

// DTProp is a property and its raw value.
type DTProp struct {
	Name  string
	Value []byte
}

// DTU32 encodes cells.
func DTU32(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.BigEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// DTStrings encodes a string list.
func DTStrings(s ...string) []byte {
	var b []byte
	for _, x := range s {
		b = append(append(b, x...), 0)
	}
	return b
}

// FDT tokens and header.
const (
	fdtMagic     = 0xd00dfeed
	fdtBeginNode = 1
	fdtEndNode   = 2
	fdtProp      = 3
	fdtEnd       = 9
	fdtHeaderLen = 40
)

// DTB encodes root (named "") with the memory reservation block rsv
// (address, size pairs).
func DTB(root *DTNode, rsv [][2]uint64) []byte {
	var st, strs bytes.Buffer
	names := map[string]uint32{}
	u32 := func(v uint32) { binary.Write(&st, binary.BigEndian, v) }
	pad := func() {
		for st.Len()%4 != 0 {
			st.WriteByte(0)
		}
	}
	var node func(n *DTNode)
	node = func(n *DTNode) {
		u32(fdtBeginNode)
		st.WriteString(n.Name)
		st.WriteByte(0)
		pad()
		for _, p := range n.Props {
			off, ok := names[p.Name]
			if !ok {
				off = uint32(strs.Len())
				names[p.Name] = off
				strs.WriteString(p.Name)
				strs.WriteByte(0)
			}
			u32(fdtProp)
			u32(uint32(len(p.Value)))
			u32(off)
			st.Write(p.Value)
			pad()
		}
		for _, c := range n.Children {
			node(c)
		}
		u32(fdtEndNode)
	}
	node(root)
	u32(fdtEnd)

	rsvOff := uint32(fdtHeaderLen)
	structOff := rsvOff + uint32(16*(len(rsv)+1))
	stringsOff := structOff + uint32(st.Len())
	total := stringsOff + uint32(strs.Len())
	var out bytes.Buffer
	for _, v := range []uint32{fdtMagic, total, structOff, stringsOff, rsvOff, 17, 16, 0, uint32(strs.Len()), uint32(st.Len())} {
		binary.Write(&out, binary.BigEndian, v)
	}
	for _, r := range append(rsv, [2]uint64{}) {
		binary.Write(&out, binary.BigEndian, r)
	}
	out.Write(st.Bytes())
	out.Write(strs.Bytes())
	return out.Bytes()
}

// RPi3DeviceTree is the Raspberry Pi 3's tree as the kernel reads it: RAM
// (the firmware, or QEMU, rewrites /memory; the top 64 MiB below the
// peripherals belong to the GPU and are reserved, as is the first page with
// the firmware's spin table), the four Cortex-A53s released through the
// spin table, and the PL011 console. /chosen's bootargs is cmdline: the
// firmware replaces it with cmdline.txt's line, QEMU with -append's when
// one is given. Addresses are the ARM's view
// (0x3F000000 peripherals), not the VideoCore bus addresses Linux's tree
// translates.
func RPi3DeviceTree(cmdline string) []byte {
	cpus := &DTNode{Name: "cpus", Props: []DTProp{
		{"#address-cells", DTU32(1)}, {"#size-cells", DTU32(0)},
	}}
	for i := range uint32(4) {
		cpus.Children = append(cpus.Children, &DTNode{Name: fmt.Sprintf("cpu@%d", i), Props: []DTProp{
			{"device_type", DTStrings("cpu")},
			{"compatible", DTStrings("arm,cortex-a53")},
			{"reg", DTU32(i)},
			{"enable-method", DTStrings("spin-table")},
			{"cpu-release-addr", DTU32(0, 0xd8+8*i)},
		}})
	}
	root := &DTNode{Props: []DTProp{
		{"#address-cells", DTU32(1)}, {"#size-cells", DTU32(1)},
		{"compatible", DTStrings("raspberrypi,3-model-b", "brcm,bcm2837")},
		{"model", DTStrings("Raspberry Pi 3 Model B (yolk)")},
	}, Children: []*DTNode{
		{Name: "chosen", Props: []DTProp{
			{"bootargs", DTStrings(cmdline)},
			{"stdout-path", DTStrings("/serial@3f201000")},
		}},
		{Name: "memory@0", Props: []DTProp{
			{"device_type", DTStrings("memory")},
			{"reg", DTU32(0, 0x3c000000)},
		}},
		cpus,
		{Name: "serial@3f201000", Props: []DTProp{
			{"compatible", DTStrings("arm,pl011", "arm,primecell")},
			{"reg", DTU32(0x3f201000, 0x1000)},
		}},
	}}
	return DTB(root, [][2]uint64{{0, 0x1000}, {0x3c000000, 0x4000000}})
}
