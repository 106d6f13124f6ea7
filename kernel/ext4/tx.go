package ext4

// txState is the open transaction (tx.go's seam); filled in with the
// write side.
type txState struct{}
