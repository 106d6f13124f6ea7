// Board numbers (boot.Board), shared by entry_arm64.s and entry_arm64.go.
#define BoardVirt	0
#define BoardRPi3	1
