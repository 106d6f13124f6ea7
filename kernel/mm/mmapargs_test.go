package mm

import (
	"testing"

	"golang.org/x/sys/unix"

	"yolk/kernel/abi"
)

// TestMapArea: mmap's length and address checks in Linux's order, and a
// hint rounded down to its page.
func TestMapArea(t *testing.T) {
	const fixed, noreplace = unix.MAP_FIXED, unix.MAP_FIXED_NOREPLACE
	for _, c := range []struct {
		addr, n, flags  uintptr
		wantAddr, wantN uintptr
		want            abi.Errno
	}{
		{0, 0, 0, 0, 0, abi.EINVAL},
		{1, 0, fixed, 0, 0, abi.EINVAL}, // the length first
		{0, MaxMapping + 1, 0, 0, 0, abi.ENOMEM},
		{0, ^uintptr(0), fixed, 0, 0, abi.ENOMEM},
		{0x12345, 1, 0, 0x12000, PageSize, 0}, // a hint: rounded down
		{UserMax + PageSize, 10, 0, UserMax + PageSize, PageSize, 0},
		{UserMin + 1, PageSize + 1, fixed, 0, 0, abi.EINVAL},
		{UserMin + 1, PageSize + 1, noreplace, 0, 0, abi.EINVAL},
		{UserMin, PageSize + 1, fixed, UserMin, 2 * PageSize, 0},
		{UserMax - PageSize, PageSize, fixed, UserMax - PageSize, PageSize, 0},
		{UserMax - PageSize, 2 * PageSize, fixed, 0, 0, abi.ENOMEM},
		{UserMax - PageSize + 1, 2 * PageSize, noreplace, 0, 0, abi.ENOMEM}, // past the user half before unaligned
	} {
		a, n, e := MapArea(c.addr, c.n, c.flags)
		if a != c.wantAddr || n != c.wantN || e != c.want {
			t.Errorf("MapArea(%#x, %#x, %#x) = %#x, %#x, %d; want %#x, %#x, %d", c.addr, c.n, c.flags, a, n, e, c.wantAddr, c.wantN, c.want)
		}
	}
}

// TestMapFileType: the offset, the mapping type and MAP_SHARED_VALIDATE's
// flags, in that order.
func TestMapFileType(t *testing.T) {
	const pg = PageSize
	for _, c := range []struct {
		n, flags, off uintptr
		shared        bool
		want          abi.Errno
	}{
		{pg, unix.MAP_PRIVATE, 0, false, 0},
		{pg, unix.MAP_SHARED, 0, true, 0},
		{pg, unix.MAP_SHARED_VALIDATE, 0, true, 0},
		{pg, 0, 1 << 63, false, abi.EOVERFLOW}, // before the type
		{2 * pg, unix.MAP_SHARED, 1<<63 - pg, false, abi.EOVERFLOW},
		{pg, 0, 0, false, abi.EINVAL},
		{pg, unix.MAP_SHARED | unix.MAP_SYNC, 0, true, 0},                               // MAP_SHARED ignores it
		{pg, unix.MAP_SHARED_VALIDATE | unix.MAP_SYNC, 0, false, abi.EOPNOTSUPP},        // DAX only
		{pg, unix.MAP_SHARED_VALIDATE | unix.MAP_POPULATE | unix.MAP_FIXED, 0, true, 0}, // legacy flags
		{pg, unix.MAP_PRIVATE | unix.MAP_SYNC, 0, false, 0},
	} {
		shared, e := MapFileType(c.n, c.flags, c.off)
		if shared != c.shared || e != c.want {
			t.Errorf("MapFileType(%#x, %#x, %#x) = %v, %d; want %v, %d", c.n, c.flags, c.off, shared, e, c.shared, c.want)
		}
	}
}

// TestMapCharge: MAP_NORESERVE and shared file mappings are never
// charged, shared anonymous ones at once, private ones when writable.
func TestMapCharge(t *testing.T) {
	for _, c := range []struct {
		flags        uintptr
		shared, anon bool
		want         Charge
	}{
		{unix.MAP_NORESERVE, true, true, ChargeNone},
		{unix.MAP_NORESERVE, false, true, ChargeNone},
		{0, true, false, ChargeNone},
		{0, true, true, ChargeNow},
		{0, false, true, ChargeWrite},
		{0, false, false, ChargeWrite},
	} {
		if got := MapCharge(c.flags, c.shared, c.anon); got != c.want {
			t.Errorf("MapCharge(%#x, %v, %v) = %d, want %d", c.flags, c.shared, c.anon, got, c.want)
		}
	}
}
