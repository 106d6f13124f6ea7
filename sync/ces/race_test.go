//go:build race

package ces

// raceEnabled reports whether the test binary was built with -race. The
// race runtime randomises the scheduler (see TestLocality).
const raceEnabled = true
