// Package failfast has three failing tests (a yolk test fixture for
// -failfast: only the first runs).
package failfast

import "testing"

func TestFirst(t *testing.T)  { t.Error("first") }
func TestSecond(t *testing.T) { t.Error("second") }
func TestThird(t *testing.T)  { t.Error("third") }
