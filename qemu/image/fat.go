package image

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// A disk image for an SD card: an MBR partition table with one FAT16
// partition (type 0x0E, LBA) holding files in its root directory, each in
// one contiguous cluster chain — what the Raspberry Pi's boot ROM and
// firmware read. Only 8.3 names (stored upper case, marked lower case for
// Linux and Windows); no subdirectories, no long names. FATFiles reads such
// an image back (the tests, and yolk run on a .img).

// FATFile is a file in the partition's root directory.
type FATFile struct {
	Name string // 8.3, lower case
	Data []byte
}

const (
	sectorSize    = 512
	partStart     = 2048 // 1 MiB: the partition's first sector
	rootEntries   = 512
	fatPartType   = 0x0E // FAT16, LBA
	minDiskMiB    = 64
	dirEntrySize  = 32
	fat16MinClust = 4085
	fat16MaxClust = 65524
)

// FATDisk returns a disk image (a whole number of MiB, at least 64) with
// one FAT16 partition labelled label holding files.
func FATDisk(label string, files []FATFile) ([]byte, error) {
	var need int
	for _, f := range files {
		if _, err := shortName(f.Name); err != nil {
			return nil, err
		}
		need += len(f.Data) + 32<<10
	}
	if len(files) > rootEntries-1 {
		return nil, fmt.Errorf("%d files: the root directory holds %d", len(files), rootEntries-1)
	}
	mib := max(minDiskMiB, (need+need/4)>>20+2)
	total := mib << 20 / sectorSize
	part := total - partStart

	// Cluster size: the smallest (from 2 KiB) that keeps FAT16's count.
	spc := 4
	for part/spc > fat16MaxClust {
		spc *= 2
	}
	if spc > 128 {
		return nil, fmt.Errorf("%d MiB is too large for FAT16", mib)
	}
	const reserved = 1
	rootSectors := rootEntries * dirEntrySize / sectorSize
	fatSectors := 1
	var clusters int
	for {
		clusters = (part - reserved - rootSectors - 2*fatSectors) / spc
		need := ((clusters+2)*2 + sectorSize - 1) / sectorSize
		if need <= fatSectors {
			break
		}
		fatSectors = need
	}
	if clusters < fat16MinClust {
		return nil, fmt.Errorf("%d clusters: too few for FAT16", clusters)
	}

	disk := make([]byte, total*sectorSize)
	// MBR: one partition.
	le := binary.LittleEndian
	pe := disk[446:462]
	pe[0] = 0x80 // bootable
	copy(pe[1:4], []byte{0xfe, 0xff, 0xff})
	pe[4] = fatPartType
	copy(pe[5:8], []byte{0xfe, 0xff, 0xff})
	le.PutUint32(pe[8:], partStart)
	le.PutUint32(pe[12:], uint32(part))
	le.PutUint32(disk[440:], 0x59304c4b) // disk signature
	disk[510], disk[511] = 0x55, 0xAA

	p := disk[partStart*sectorSize:]
	copy(p[0:], []byte{0xEB, 0x3C, 0x90})
	copy(p[3:11], "YOLK    ")
	le.PutUint16(p[11:], sectorSize)
	p[13] = byte(spc)
	le.PutUint16(p[14:], reserved)
	p[16] = 2 // FATs
	le.PutUint16(p[17:], rootEntries)
	if part < 65536 {
		le.PutUint16(p[19:], uint16(part))
	} else {
		le.PutUint32(p[32:], uint32(part))
	}
	p[21] = 0xF8
	le.PutUint16(p[22:], uint16(fatSectors))
	le.PutUint16(p[24:], 63)
	le.PutUint16(p[26:], 255)
	le.PutUint32(p[28:], partStart)
	p[36] = 0x80
	p[38] = 0x29
	le.PutUint32(p[39:], 0x594f4c4b)
	copy(p[43:54], fmt.Sprintf("%-11s", strings.ToUpper(label)))
	copy(p[54:62], "FAT16   ")
	p[510], p[511] = 0x55, 0xAA

	fat := make([]byte, fatSectors*sectorSize)
	le.PutUint16(fat[0:], 0xFFF8)
	le.PutUint16(fat[2:], 0xFFFF)
	root := make([]byte, rootSectors*sectorSize)
	copy(root[0:11], fmt.Sprintf("%-11s", strings.ToUpper(label)))
	root[11] = 0x08 // volume label
	dataStart := reserved + 2*fatSectors + rootSectors
	next := 2
	for i, f := range files {
		name, _ := shortName(f.Name)
		e := root[(i+1)*dirEntrySize:]
		copy(e[0:11], name)
		e[11] = 0x20               // archive
		e[12] = 0x18               // base and extension lower case
		le.PutUint16(e[16:], 0x21) // created 1980-01-01
		le.PutUint16(e[24:], 0x21) // written 1980-01-01
		le.PutUint32(e[28:], uint32(len(f.Data)))
		n := (len(f.Data) + spc*sectorSize - 1) / (spc * sectorSize)
		if n == 0 {
			continue // an empty file has no cluster
		}
		if next+n > clusters+2 {
			return nil, errors.New("the files do not fit the partition")
		}
		le.PutUint16(e[26:], uint16(next))
		for c := next; c < next+n; c++ {
			v := uint16(c + 1)
			if c == next+n-1 {
				v = 0xFFFF
			}
			le.PutUint16(fat[2*c:], v)
		}
		copy(p[(dataStart+(next-2)*spc)*sectorSize:], f.Data)
		next += n
	}
	copy(p[reserved*sectorSize:], fat)
	copy(p[(reserved+fatSectors)*sectorSize:], fat)
	copy(p[(reserved+2*fatSectors)*sectorSize:], root)
	return disk, nil
}

// shortName is name's 8.3 directory form: "kernel8.img" → "KERNEL8 IMG".
func shortName(name string) (string, error) {
	base, ext, _ := strings.Cut(name, ".")
	ok := len(base) >= 1 && len(base) <= 8 && len(ext) <= 3 && !strings.Contains(ext, ".")
	for _, c := range base + ext {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			ok = false
		}
	}
	if !ok {
		return "", fmt.Errorf("%q: not a lower-case 8.3 name", name)
	}
	return fmt.Sprintf("%-8s%-3s", strings.ToUpper(base), strings.ToUpper(ext)), nil
}

// FATFiles reads the root directory's files of the first partition of a
// disk image made by FATDisk (FAT16 with an MBR).
func FATFiles(disk []byte) ([]FATFile, error) {
	le := binary.LittleEndian
	if len(disk) < sectorSize || disk[510] != 0x55 || disk[511] != 0xAA {
		return nil, errors.New("no MBR")
	}
	pe := disk[446:462]
	if t := pe[4]; t != 0x0E && t != 0x06 && t != 0x0B && t != 0x0C {
		return nil, fmt.Errorf("first partition has type %#x, not FAT", t)
	}
	start := int64(le.Uint32(pe[8:])) * sectorSize
	if start+sectorSize > int64(len(disk)) {
		return nil, errors.New("the partition starts past the end of the image")
	}
	p := disk[start:]
	if string(p[54:59]) != "FAT16" {
		return nil, fmt.Errorf("the partition is not FAT16 (%q)", p[54:62])
	}
	bps := int(le.Uint16(p[11:]))
	spc := int(p[13])
	reserved := int(le.Uint16(p[14:]))
	nfat := int(p[16])
	entries := int(le.Uint16(p[17:]))
	fatSz := int(le.Uint16(p[22:]))
	if bps != sectorSize || spc == 0 || nfat == 0 || fatSz == 0 {
		return nil, errors.New("bad FAT16 boot sector")
	}
	fat := p[reserved*bps:]
	rootOff := (reserved + nfat*fatSz) * bps
	dataOff := rootOff + entries*dirEntrySize
	var out []FATFile
	for i := range entries {
		e := p[rootOff+i*dirEntrySize:]
		if e[0] == 0 {
			break
		}
		if e[0] == 0xE5 || e[11]&0x18 != 0 {
			continue // deleted, volume label or directory
		}
		name := strings.ToLower(strings.TrimRight(string(e[0:8]), " "))
		if ext := strings.TrimRight(string(e[8:11]), " "); ext != "" {
			name += "." + strings.ToLower(ext)
		}
		size := int(le.Uint32(e[28:]))
		data := make([]byte, 0, size)
		for c := int(le.Uint16(e[26:])); len(data) < size; c = int(le.Uint16(fat[2*c:])) {
			if c < 2 || c >= 0xFFF8 {
				return nil, fmt.Errorf("%s: cluster chain ends early", name)
			}
			off := dataOff + (c-2)*spc*bps
			n := min(spc*bps, size-len(data))
			if off+n > len(p) {
				return nil, fmt.Errorf("%s: cluster %d past the end of the image", name, c)
			}
			data = append(data, p[off:off+n]...)
		}
		out = append(out, FATFile{Name: name, Data: data})
	}
	return out, nil
}
