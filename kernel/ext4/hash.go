package ext4

import "math/bits"

// Directory name hashes of the htree index (Linux's fs/ext4/hash.c, from
// its description): legacy, half-MD4 and TEA, each with the name's bytes
// taken as signed or unsigned chars.
const (
	hashLegacy = iota
	hashHalfMD4
	hashTea
	hashLegacyUnsigned
	hashHalfMD4Unsigned
	hashTeaUnsigned
	hashSiphash
)

const htreeEOF32 = 0x7FFFFFFF

// dirHash is the major hash of name under hash version v with seed.
func dirHash(name []byte, v uint8, seed *[4]uint32) (uint32, Errno) {
	buf := [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}
	if seed[0]|seed[1]|seed[2]|seed[3] != 0 {
		buf = *seed
	}
	var hash uint32
	var in [8]uint32
	switch v {
	case hashLegacy, hashLegacyUnsigned:
		hash = legacyHash(name, v == hashLegacyUnsigned)
	case hashHalfMD4, hashHalfMD4Unsigned:
		for p := name; ; p = p[32:] {
			str2hashbuf(p, in[:8], v == hashHalfMD4Unsigned)
			halfMD4(&buf, &in)
			if len(p) <= 32 {
				break
			}
		}
		hash = buf[1]
	case hashTea, hashTeaUnsigned:
		for p := name; ; p = p[16:] {
			str2hashbuf(p, in[:4], v == hashTeaUnsigned)
			tea(&buf, &in)
			if len(p) <= 16 {
				break
			}
		}
		hash = buf[0]
	default:
		return 0, EUCLEAN
	}
	hash &^= 1
	if hash == htreeEOF32<<1 {
		hash = (htreeEOF32 - 1) << 1
	}
	return hash, 0
}

func char(c byte, unsigned bool) uint32 {
	if unsigned {
		return uint32(c)
	}
	return uint32(int32(int8(c)))
}

func legacyHash(name []byte, unsigned bool) uint32 {
	h0, h1 := uint32(0x12a3fe2d), uint32(0x37abe8f9)
	for _, c := range name {
		h := h1 + (h0 ^ char(c, unsigned)*7152373)
		if h&0x80000000 != 0 {
			h -= 0x7fffffff
		}
		h1, h0 = h0, h
	}
	return h0 << 1
}

// str2hashbuf packs up to 4*len(out) bytes of msg into out, padded with
// the length.
func str2hashbuf(msg []byte, out []uint32, unsigned bool) {
	n := len(msg)
	pad := uint32(n) | uint32(n)<<8
	pad |= pad << 16
	val := pad
	num := len(out)
	if n > num*4 {
		n = num * 4
	}
	k := 0
	for i := 0; i < n; i++ {
		val = char(msg[i], unsigned) + val<<8
		if i%4 == 3 {
			out[k] = val
			k++
			val = pad
		}
	}
	if k < num {
		out[k] = val
		k++
	}
	for ; k < num; k++ {
		out[k] = pad
	}
}

func tea(buf *[4]uint32, in *[8]uint32) {
	var sum uint32
	b0, b1 := buf[0], buf[1]
	a, b, c, d := in[0], in[1], in[2], in[3]
	for n := 0; n < 16; n++ {
		sum += 0x9E3779B9
		b0 += (b1<<4 + a) ^ (b1 + sum) ^ (b1>>5 + b)
		b1 += (b0<<4 + c) ^ (b0 + sum) ^ (b0>>5 + d)
	}
	buf[0] += b0
	buf[1] += b1
}

func halfMD4(buf *[4]uint32, in *[8]uint32) {
	const k2, k3 = 0x5A827999, 0x6ED9EBA1
	a, b, c, d := buf[0], buf[1], buf[2], buf[3]

	a = bits.RotateLeft32(a+md4F(b, c, d)+in[0], 3)
	d = bits.RotateLeft32(d+md4F(a, b, c)+in[1], 7)
	c = bits.RotateLeft32(c+md4F(d, a, b)+in[2], 11)
	b = bits.RotateLeft32(b+md4F(c, d, a)+in[3], 19)
	a = bits.RotateLeft32(a+md4F(b, c, d)+in[4], 3)
	d = bits.RotateLeft32(d+md4F(a, b, c)+in[5], 7)
	c = bits.RotateLeft32(c+md4F(d, a, b)+in[6], 11)
	b = bits.RotateLeft32(b+md4F(c, d, a)+in[7], 19)

	a = bits.RotateLeft32(a+md4G(b, c, d)+in[1]+k2, 3)
	d = bits.RotateLeft32(d+md4G(a, b, c)+in[3]+k2, 5)
	c = bits.RotateLeft32(c+md4G(d, a, b)+in[5]+k2, 9)
	b = bits.RotateLeft32(b+md4G(c, d, a)+in[7]+k2, 13)
	a = bits.RotateLeft32(a+md4G(b, c, d)+in[0]+k2, 3)
	d = bits.RotateLeft32(d+md4G(a, b, c)+in[2]+k2, 5)
	c = bits.RotateLeft32(c+md4G(d, a, b)+in[4]+k2, 9)
	b = bits.RotateLeft32(b+md4G(c, d, a)+in[6]+k2, 13)

	a = bits.RotateLeft32(a+md4H(b, c, d)+in[3]+k3, 3)
	d = bits.RotateLeft32(d+md4H(a, b, c)+in[7]+k3, 9)
	c = bits.RotateLeft32(c+md4H(d, a, b)+in[2]+k3, 11)
	b = bits.RotateLeft32(b+md4H(c, d, a)+in[6]+k3, 15)
	a = bits.RotateLeft32(a+md4H(b, c, d)+in[1]+k3, 3)
	d = bits.RotateLeft32(d+md4H(a, b, c)+in[5]+k3, 9)
	c = bits.RotateLeft32(c+md4H(d, a, b)+in[0]+k3, 11)
	b = bits.RotateLeft32(b+md4H(c, d, a)+in[4]+k3, 15)

	buf[0] += a
	buf[1] += b
	buf[2] += c
	buf[3] += d
}

func md4F(x, y, z uint32) uint32 { return z ^ (x & (y ^ z)) }
func md4G(x, y, z uint32) uint32 { return (x & y) + ((x ^ y) & z) }
func md4H(x, y, z uint32) uint32 { return x ^ y ^ z }
