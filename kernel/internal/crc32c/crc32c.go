// Package crc32c is CRC-32C (Castagnoli), the checksum of ext4's
// metadata_csum and of jbd2's journal checksums (v2, v3), for kernel
// context: the tables are a constant literal (table.go, made by gen.go),
// not hash/crc32's tables built and allocated on first use.
//
// Two forms, because Linux's and the standard library's differ:
// Update is Linux's crc32c(crc, p, len) — the running value is taken and
// returned as is, no inversion on entry or exit (ext4 and jbd2 seed it
// with ~0 and store the result without a final inversion); Checksum is
// the standard CRC-32C of p, what hash/crc32's Castagnoli table gives.
//
// May not: allocate, keep state, or call the runtime. Slicing-by-8, no
// CPU instructions (SSE4.2's crc32, ARMv8's crc32c) — yet.
package crc32c

import "encoding/binary"

// Update continues the CRC-32C value crc over p, without inversion
// (Linux's crc32c; Update(^0, p) is the raw register, not the standard
// checksum).
func Update(crc uint32, p []byte) uint32 {
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint32(p)
		hi := binary.LittleEndian.Uint32(p[4:])
		crc = table[7][crc&0xff] ^ table[6][crc>>8&0xff] ^
			table[5][crc>>16&0xff] ^ table[4][crc>>24] ^
			table[3][hi&0xff] ^ table[2][hi>>8&0xff] ^
			table[1][hi>>16&0xff] ^ table[0][hi>>24]
		p = p[8:]
	}
	for _, b := range p {
		crc = table[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}

// Checksum is the standard CRC-32C of p (hash/crc32.Checksum with the
// Castagnoli table).
func Checksum(p []byte) uint32 { return ^Update(^uint32(0), p) }
