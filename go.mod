module yolk

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/usbarmory/tamago v1.25.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.49.0
)
