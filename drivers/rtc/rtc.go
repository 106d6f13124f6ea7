//go:build amd64

// Package rtc reads the wall-clock time from the MC146818 CMOS real-time
// clock (ports 0x70/0x71), once at boot. TamaGo's soc/intel/rtc does not
// serve: it returns a time.Time (time.Date, time.LoadLocation), and the
// kernel reads the clock before the Go runtime exists.
//
// Kernel-context: no allocation, no runtime calls.
package rtc

import "yolk/arch/amd64"

func cmos(reg uint8) uint8 {
	amd64.Outb(0x70, reg)
	return amd64.Inb(0x71)
}

// Unix returns the RTC time as seconds since 1970 (the RTC is assumed to
// keep UTC, as QEMU's does by default). ok is false when there is no RTC
// (Firecracker's machine, QEMU microvm with rtc=off): the ports read all
// ones, so the update-in-progress bit never clears.
func Unix() (secs int64, ok bool) {
	if cmos(0x0A) == 0xFF && cmos(0x0B) == 0xFF && cmos(0x0D) == 0xFF {
		return 0, false
	}
	// Wait for an update to finish (it takes under 2 ms; a bound keeps a
	// broken clock from stopping the boot), then read twice until stable.
	for i := 0; cmos(0x0A)&0x80 != 0; i++ {
		if i == 1e6 {
			return 0, false
		}
	}
	var s, m, h, d, mo, y uint8
	for i := 0; ; i++ {
		s, m, h, d, mo, y = cmos(0), cmos(2), cmos(4), cmos(7), cmos(8), cmos(9)
		if s == cmos(0) && m == cmos(2) && h == cmos(4) && d == cmos(7) && mo == cmos(8) && y == cmos(9) {
			break
		}
		if i == 1e4 {
			return 0, false
		}
	}
	b := cmos(0x0B)
	if b&0x04 == 0 { // BCD
		bcd := func(v uint8) uint8 { return v&0x0F + v>>4*10 }
		s, m, d, mo, y = bcd(s), bcd(m), bcd(d), bcd(mo), bcd(y)
		h = bcd(h&0x7F) | h&0x80
	}
	if b&0x02 == 0 && h&0x80 != 0 { // 12-hour clock, PM
		h = (h&0x7F + 12) % 24
	}
	year := 2000 + int64(y)
	return daysFromCivil(year, int64(mo), int64(d))*86400 + int64(h)*3600 + int64(m)*60 + int64(s), true
}

// daysFromCivil counts days from 1970-01-01 to y-m-d (proleptic Gregorian).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// Present reports whether there is a CMOS clock (its registers do not all
// read as ones).
func Present() bool { return cmos(0x0A) != 0xFF || cmos(0x0B) != 0xFF || cmos(0x0D) != 0xFF }

// Seconds reads the seconds register as it is (BCD or binary, as
// register B says): a value that changes once a second, at the update.
// QEMU computes it from its clock at the read.
func Seconds() uint8 { return cmos(0x00) }
