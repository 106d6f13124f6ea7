//go:build amd64

package rtc

import (
	"testing"
	"time"
)

func TestDaysFromCivil(t *testing.T) {
	for _, d := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := daysFromCivil(int64(d.Year()), int64(d.Month()), int64(d.Day())), d.Unix()/86400; got != want {
			t.Errorf("%s: %d days, want %d", d.Format(time.DateOnly), got, want)
		}
	}
}
