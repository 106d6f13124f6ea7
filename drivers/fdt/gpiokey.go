package fdt

// GPIOKey is a key wired to a GPIO controller's pin, from a "gpio-keys"
// node: the controller (an "arm,pl061" node: its registers and
// interrupt) and the pin.
type GPIOKey struct {
	Controller Device
	Pin        uint32
}

// KeyPower is Linux's input code for the power key (KEY_POWER), the
// "linux,code" of QEMU virt's /gpio-keys/poweroff.
const KeyPower = 116

// PowerKey finds the power key: a child of an enabled "gpio-keys" node
// whose "linux,code" is KeyPower and whose "gpios" (<phandle pin flags>)
// names an enabled "arm,pl061" controller. QEMU virt's (without ACPI)
// is PL061 pin 3, the controller at 0x9030000 with SPI 7.
func (f *FDT) PowerKey() (GPIOKey, Error) {
	it := f.Walk()
	if _, e := f.FindCompatible(&it, "gpio-keys"); e != OK {
		return GPIOKey{}, e
	}
	depth := it.Depth()
	for {
		n, e := f.Next(&it)
		if e != OK || it.Depth() <= depth {
			return GPIOKey{}, ErrNotFound
		}
		if it.Depth() != depth+1 {
			continue
		}
		c, e := f.Prop(n, "linux,code")
		if e != OK {
			continue
		}
		if code, _ := f.U32(c, 0); code != KeyPower {
			continue
		}
		g, e := f.Prop(n, "gpios")
		if e != OK {
			return GPIOKey{}, e
		}
		ph, e1 := f.U32(g, 0)
		pin, e2 := f.U32(g, 1)
		if e1 != OK || e2 != OK {
			return GPIOKey{}, ErrValue
		}
		ct := f.Walk()
		for {
			d, e := f.NextDevice(&ct, "arm,pl061")
			if e != OK {
				return GPIOKey{}, e
			}
			if p, e := f.Prop(ct.Node(), "phandle"); e == OK {
				if v, _ := f.U32(p, 0); v == ph {
					return GPIOKey{Controller: d, Pin: pin}, OK
				}
			}
		}
	}
}
