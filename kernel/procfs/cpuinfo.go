package procfs

// /proc/cpuinfo, per CPU, as arch/x86/kernel/cpu/proc.c and
// arch/arm64/kernel/cpuinfo.c print it.

// NumCapWords is the number of x86 capability words (Linux's NCAPINTS
// range this package knows): CPUModel.Caps[w] is Linux's word w.
const NumCapWords = 20

func cpuinfo(o *out, s *Snapshot) {
	n := int(s.NumCPU)
	if n > len(s.CPUs) {
		n = len(s.CPUs)
	}
	for i := 0; i < n; i++ {
		if s.Arch == ArchARM64 {
			cpuinfoARM64(o, s, i)
		} else {
			cpuinfoX86(o, s, i)
		}
	}
}

func cpuinfoX86(o *out, s *Snapshot, i int) {
	m := &s.Model
	c := &s.CPUs[i]
	siblings, cores := m.Siblings, m.Cores
	if siblings == 0 {
		siblings = uint32(s.NumCPU)
	}
	if cores == 0 {
		cores = uint32(s.NumCPU)
	}
	o.str("processor\t: ")
	o.dec(uint64(i))
	o.str("\nvendor_id\t: ")
	o.bytes(cstr(m.Vendor[:]))
	o.str("\ncpu family\t: ")
	o.dec(uint64(m.Family))
	o.str("\nmodel\t\t: ")
	o.dec(uint64(m.Model))
	o.str("\nmodel name\t: ")
	if name := cstr(m.Name[:]); len(name) > 0 {
		o.bytes(name)
	} else {
		o.str("unknown")
	}
	o.str("\nstepping\t: ")
	o.dec(uint64(m.Stepping))
	o.str("\nmicrocode\t: 0x")
	o.hex(uint64(m.Microcode), 0)
	o.ch('\n')
	if m.Caps[0]&(1<<4) != 0 { // tsc
		o.str("cpu MHz\t\t: ")
		o.dec(m.KHz / 1000)
		o.ch('.')
		o.ch(byte('0' + m.KHz%1000/100))
		o.ch(byte('0' + m.KHz%100/10))
		o.ch(byte('0' + m.KHz%10))
		o.ch('\n')
	}
	if m.CacheKB != 0 {
		o.str("cache size\t: ")
		o.dec(uint64(m.CacheKB))
		o.str(" KB\n")
	}
	o.str("physical id\t: 0\nsiblings\t: ")
	o.dec(uint64(siblings))
	o.str("\ncore id\t\t: ")
	o.dec(uint64(c.CoreID))
	o.str("\ncpu cores\t: ")
	o.dec(uint64(cores))
	o.str("\napicid\t\t: ")
	o.dec(uint64(c.APICID))
	o.str("\ninitial apicid\t: ")
	o.dec(uint64(c.APICID))
	o.str("\nfpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: ")
	o.dec(uint64(m.CPUIDLevel))
	o.str("\nwp\t\t: yes\nflags\t\t:")
	rdseedBroken := m.zen5RDSEEDBroken()
	for k := range x86Flags {
		f := &x86Flags[k]
		if f.bit == capRDSEED && rdseedBroken {
			continue
		}
		if m.Caps[f.bit/32]&(1<<(f.bit%32)) != 0 {
			o.ch(' ')
			o.str(f.name)
		}
	}
	o.str("\nbugs\t\t:\nbogomips\t: ")
	bogo := m.BogoMIPS
	if bogo == 0 {
		bogo = m.KHz / 5 // loops_per_jiffy from the TSC: tsc_khz*1000/HZ, over 5000/HZ
	}
	o.centi(bogo)
	if m.TLBSize != 0 {
		o.str("\nTLB size\t: ")
		o.dec(uint64(m.TLBSize))
		o.str(" 4K pages")
	}
	o.str("\nclflush size\t: ")
	o.dec(uint64(m.ClflushSize))
	o.str("\ncache_alignment\t: ")
	o.dec(uint64(m.ClflushSize))
	o.str("\naddress sizes\t: ")
	o.dec(uint64(m.PhysBits))
	o.str(" bits physical, ")
	o.dec(uint64(m.VirtBits))
	o.str(" bits virtual\npower management:")
	for b := 0; b < 32; b++ {
		if m.Power&(1<<b) == 0 {
			continue
		}
		if b < len(x86Power) {
			if x86Power[b] != "" {
				o.ch(' ')
				o.str(x86Power[b])
			}
			continue
		}
		o.str(" [")
		o.dec(uint64(b))
		o.ch(']')
	}
	o.str("\n\n")
}

// zen5RDSEEDBroken reports whether Linux leaves rdseed out on this CPU:
// AMD's Zen 5 (family 0x1a) can return 0 with CF set from RDSEED's 16-
// and 32-bit forms (AMD-SB-7055), and Linux's init_amd_zen5 clears the
// capability unless the model and stepping are one of the two with a
// fixed microcode and the microcode is at least that. It is decided
// here, where it is shown, because the microcode is the caller's
// (ReadCPUID).
func (m *CPUModel) zen5RDSEEDBroken() bool {
	if string(m.Vendor[:]) != "AuthenticAMD" || m.Family != 0x1a {
		return false
	}
	if md := m.Model; !(md <= 0x2f || md >= 0x40 && md <= 0x4f || md >= 0x60 && md <= 0x7f) {
		return false // not Zen 5 (Linux's X86_FEATURE_ZEN5 models)
	}
	switch {
	case m.Model == 0x02 && m.Stepping == 1:
		return m.Microcode < 0x0b00215a
	case m.Model == 0x11 && m.Stepping == 0:
		return m.Microcode < 0x0b101054
	}
	return true
}

// x86Power names CPUID 0x80000007 EDX's bits (x86_power_flags); bit 8,
// the invariant TSC, shows as constant_tsc instead.
var x86Power = [...]string{"ts", "fid", "vid", "ttp", "tm", "stc", "100mhzsteps", "hwpstate", "", "cpb", "eff_freq_ro", "proc_feedback", "acc_power"}

func cpuinfoARM64(o *out, s *Snapshot, i int) {
	m := &s.Model
	midr := s.CPUs[i].MIDR
	o.str("processor\t: ")
	o.dec(uint64(i))
	o.str("\nBogoMIPS\t: ")
	o.centi(m.BogoMIPS)
	o.str("\nFeatures\t:")
	for b := 0; b < 64; b++ {
		if m.HWCap&(1<<b) != 0 && b < len(hwcapNames) && hwcapNames[b] != "" {
			o.ch(' ')
			o.str(hwcapNames[b])
		}
	}
	for b := 0; b < 64; b++ {
		if m.HWCap2&(1<<b) != 0 && b < len(hwcap2Names) {
			o.ch(' ')
			o.str(hwcap2Names[b])
		}
	}
	o.str("\nCPU implementer\t: 0x")
	o.hex(uint64(midr>>24), 2)
	o.str("\nCPU architecture: 8\nCPU variant\t: 0x")
	o.hex(uint64(midr>>20&0xf), 0)
	o.str("\nCPU part\t: 0x")
	o.hex(uint64(midr>>4&0xfff), 3)
	o.str("\nCPU revision\t: ")
	o.dec(uint64(midr & 0xf))
	o.str("\n\n")
}

// hwcapNames and hwcap2Names are arm64's hwcap_str: AT_HWCAP's bits, then
// AT_HWCAP2's, the order cpuinfo lists them in.
var hwcapNames = [...]string{
	"fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32",
	"atomics", "fphp", "asimdhp", "cpuid", "asimdrdm", "jscvt", "fcma", "lrcpc",
	"dcpop", "sha3", "sm3", "sm4", "asimddp", "sha512", "sve", "asimdfhm",
	"dit", "uscat", "ilrcpc", "flagm", "ssbs", "sb", "paca", "pacg",
}

var hwcap2Names = [...]string{
	"dcpodp", "sve2", "sveaes", "svepmull", "svebitperm", "svesha3", "svesm4", "flagm2",
	"frint", "svei8mm", "svef32mm", "svef64mm", "svebf16", "i8mm", "bf16", "dgh",
	"rng", "bti", "mte", "ecv", "afp", "rpres", "mte3", "sme",
	"smei16i64", "smef64f64", "smei8i32", "smef16f32", "smeb16f32", "smef32f32", "smefa64", "wfxt",
	"ebf16", "sveebf16", "cssc", "rprfm", "sve2p1", "sme2", "sme2p1", "smei16i32",
	"smebi32i32", "smeb16b16", "smef16f16", "mops", "hbc", "sveb16b16",
}

// x86 capability bits (word*32 + bit) this package names or derives.
const (
	capFPU        = 0*32 + 0
	capFXSR       = 0*32 + 24
	capXMM        = 0*32 + 25
	capXMM2       = 0*32 + 26
	capCMOV       = 0*32 + 15
	capMMX        = 0*32 + 23
	capMMXEXT     = 1*32 + 22
	capFXSROPT    = 1*32 + 25
	capConstTSC   = 3*32 + 8
	capArchPerf   = 3*32 + 11
	capRepGood    = 3*32 + 16
	capNOPL       = 3*32 + 20
	capXTopology  = 3*32 + 22
	capNonstopTSC = 3*32 + 24
	capCPUID      = 3*32 + 25
	capTSCKnown   = 3*32 + 31
	capXMM3       = 4*32 + 0
	capPCLMUL     = 4*32 + 1
	capSSSE3      = 4*32 + 9
	capFMA        = 4*32 + 12
	capXMM41      = 4*32 + 19
	capXMM42      = 4*32 + 20
	capAES        = 4*32 + 25
	capXSAVE      = 4*32 + 26
	capAVX        = 4*32 + 28
	capF16C       = 4*32 + 29
	capSSBD       = 7*32 + 17
	capIBRS       = 7*32 + 25
	capIBPB       = 7*32 + 26
	capSTIBP      = 7*32 + 27
	capSGX        = 9*32 + 2
	capAVX2       = 9*32 + 5
	capMPX        = 9*32 + 14
	capAVX512F    = 9*32 + 16
	capAVX512DQ   = 9*32 + 17
	capRDSEED     = 9*32 + 18
	capAVX512IFMA = 9*32 + 21
	capAVX512PF   = 9*32 + 26
	capAVX512ER   = 9*32 + 27
	capAVX512CD   = 9*32 + 28
	capSHANI      = 9*32 + 29
	capAVX512BW   = 9*32 + 30
	capAVX512VL   = 9*32 + 31
	capXSAVEOPT   = 10*32 + 0
	capXSAVEC     = 10*32 + 1
	capXGETBV1    = 10*32 + 2
	capXSAVES     = 10*32 + 3
	capXFD        = 10*32 + 4
	capAVXVNNI    = 12*32 + 4
	capAVX512BF16 = 12*32 + 5
	capFRED       = 12*32 + 17
	capLAM        = 12*32 + 26
	capAVX512VBMI = 16*32 + 1
	capPKU        = 16*32 + 3
	capOSPKE      = 16*32 + 4
	capVBMI2      = 16*32 + 6
	capGFNI       = 16*32 + 8
	capVAES       = 16*32 + 9
	capVPCLMUL    = 16*32 + 10
	capVNNI512    = 16*32 + 11
	capBITALG     = 16*32 + 12
	capVPOPCNTDQ  = 16*32 + 14
	capLA57       = 16*32 + 16
	capENQCMD     = 16*32 + 29
	capSGXLC      = 16*32 + 30
	cap4VNNIW     = 18*32 + 2
	cap4FMAPS     = 18*32 + 3
	capVP2INTERS  = 18*32 + 8
	capIBT        = 18*32 + 20
	capAVX512FP16 = 18*32 + 23
	capAMXBF16    = 18*32 + 22
	capAMXTile    = 18*32 + 24
	capAMXInt8    = 18*32 + 25
)

// cpuidDeps is arch/x86/kernel/cpu/cpuid-deps.c's table, for the
// features named here: clearing the second clears the first. The last
// line is yolk's: VEX-encoded F16C and AVX-VNNI and the AMX instructions
// fault without their XCR0 state, so they go with AVX and AMX_TILE.
var cpuidDeps = [...][2]uint16{
	{capFXSR, capFPU}, {capXSAVEOPT, capXSAVE}, {capXSAVEC, capXSAVE}, {capXSAVES, capXSAVE},
	{capAVX, capXSAVE}, {capPKU, capXSAVE}, {capMPX, capXSAVE}, {capXGETBV1, capXSAVE},
	{capCMOV, capFXSR}, {capMMX, capFXSR}, {capMMXEXT, capMMX}, {capFXSROPT, capFXSR},
	{capXSAVE, capFXSR}, {capXMM, capFXSR}, {capXMM2, capXMM}, {capXMM3, capXMM2},
	{capXMM41, capXMM2}, {capXMM42, capXMM2}, {capPCLMUL, capXMM2}, {capSSSE3, capXMM2},
	{capF16C, capXMM2}, {capAES, capXMM2}, {capSHANI, capXMM2}, {capGFNI, capXMM2},
	{capFMA, capAVX}, {capVAES, capAVX}, {capVPCLMUL, capAVX}, {capAVX2, capAVX},
	{capAVX512F, capAVX}, {capAVX512IFMA, capAVX512F}, {capAVX512PF, capAVX512F},
	{capAVX512ER, capAVX512F}, {capAVX512CD, capAVX512F}, {capAVX512DQ, capAVX512F},
	{capAVX512BW, capAVX512F}, {capAVX512VL, capAVX512F}, {capAVX512VBMI, capAVX512F},
	{capVBMI2, capAVX512VL}, {capVNNI512, capAVX512VL}, {capBITALG, capAVX512VL},
	{cap4VNNIW, capAVX512F}, {cap4FMAPS, capAVX512F}, {capVPOPCNTDQ, capAVX512F},
	{capVP2INTERS, capAVX512VL}, {capAVX512BF16, capAVX512VL}, {capAVX512FP16, capAVX512BW},
	{capENQCMD, capXSAVES}, {capSGXLC, capSGX}, {capXFD, capXSAVES}, {capXFD, capXGETBV1},
	{capAMXTile, capXFD},
	{capF16C, capAVX}, {capAVXVNNI, capAVX}, {capAMXBF16, capAMXTile}, {capAMXInt8, capAMXTile},
}

func (m *CPUModel) has(c uint16) bool { return m.Caps[c/32]&(1<<(c%32)) != 0 }
func (m *CPUModel) set(c uint16)      { m.Caps[c/32] |= 1 << (c % 32) }

// clear clears capability c and every capability that depends on it.
func (m *CPUModel) clear(c uint16) {
	m.Caps[c/32] &^= 1 << (c % 32)
	for changed := true; changed; {
		changed = false
		for _, d := range cpuidDeps {
			if !m.has(d[1]) && m.has(d[0]) {
				m.Caps[d[0]/32] &^= 1 << (d[0] % 32)
				changed = true
			}
		}
	}
}

// XCR0's state components that features need.
const (
	xstateYMM    = 1 << 2
	xstateAVX512 = 7 << 5  // opmask, ZMM_Hi256, Hi16_ZMM
	xstateTile   = 3 << 17 // XTILECFG, XTILEDATA
)

// ReadCPUID fills m's amd64 part from the CPUID instruction (cpuid: the
// kernel's, arch/amd64.Cpuid), the way Linux fills cpuinfo_x86: vendor,
// family, model and stepping with their extended fields, the brand
// string, CPUID level, the capability words Linux takes from CPUID, the
// ones it derives (constant_tsc, nonstop_tsc, nopl, xtopology, cpuid,
// rep_good, arch_perfmon, tsc_known_freq, ibrs, ibpb, stibp, ssbd), cache
// size, CLFLUSH line and address sizes. xcr0 is the XCR0 the kernel set
// (0: XSAVE not enabled): a feature whose registers it does not enable is
// cleared with its dependents, as are those yolk does not enable (la57,
// pku, ospke, ibt, lam, fred, enqcmd, sgx). KHz, Microcode and BogoMIPS
// are the caller's. cpuid is called, never kept.
func (m *CPUModel) ReadCPUID(cpuid func(leaf, sub uint32) (a, b, c, d uint32), xcr0 uint64) {
	*m = CPUModel{KHz: m.KHz, Microcode: m.Microcode, BogoMIPS: m.BogoMIPS, Siblings: m.Siblings, Cores: m.Cores}
	max, b, c, d := cpuid(0, 0)
	m.CPUIDLevel = max
	putLE(m.Vendor[0:4], b)
	putLE(m.Vendor[4:8], d)
	putLE(m.Vendor[8:12], c)
	intel := string(m.Vendor[:]) == "GenuineIntel"
	amd := string(m.Vendor[:]) == "AuthenticAMD" || string(m.Vendor[:]) == "HygonGenuine"

	if max >= 1 {
		a, b, c, d := cpuid(1, 0)
		m.Family = a >> 8 & 0xf
		m.Model = a >> 4 & 0xf
		m.Stepping = a & 0xf
		if m.Family == 0xf {
			m.Family += a >> 20 & 0xff
		}
		if m.Family >= 6 {
			m.Model += (a >> 16 & 0xf) << 4
		}
		if d&(1<<19) != 0 {
			m.ClflushSize = (b >> 8 & 0xff) * 8
		}
		m.Caps[0], m.Caps[4] = d, c
	}
	if max >= 6 {
		a, _, _, _ := cpuid(6, 0)
		m.Caps[14] = a
	}
	if max >= 7 {
		a, b, c, d := cpuid(7, 0)
		m.Caps[9], m.Caps[16], m.Caps[18] = b, c, d
		if a >= 1 {
			a1, _, _, _ := cpuid(7, 1)
			m.Caps[12] = a1
		}
	}
	if max >= 0xd {
		a, _, _, _ := cpuid(0xd, 1)
		m.Caps[10] = a
	}
	ext, _, _, _ := cpuid(0x80000000, 0)
	if ext >= 0x80000001 {
		_, _, c, d := cpuid(0x80000001, 0)
		m.Caps[1], m.Caps[6] = d, c
	}
	if ext >= 0x80000004 {
		for i := uint32(0); i < 3; i++ {
			a, b, c, d := cpuid(0x80000002+i, 0)
			putLE(m.Name[i*16:], a)
			putLE(m.Name[i*16+4:], b)
			putLE(m.Name[i*16+8:], c)
			putLE(m.Name[i*16+12:], d)
		}
		trimName(&m.Name)
	}
	if ext >= 0x80000007 {
		_, b, _, d := cpuid(0x80000007, 0)
		m.Caps[17], m.Power = b, d
	}
	m.PhysBits, m.VirtBits = 36, 48
	if ext >= 0x80000008 {
		a, b, _, _ := cpuid(0x80000008, 0)
		m.PhysBits, m.VirtBits = a&0xff, a>>8&0xff
		m.Caps[13] = b
	}

	// Linux's own words 3 and 7.
	m.set(capCPUID)
	m.set(capNOPL)
	if m.Power&(1<<8) != 0 || intel && m.Family == 6 && m.Model >= 0x0e {
		m.set(capConstTSC)
	}
	if m.Power&(1<<8) != 0 {
		m.set(capNonstopTSC)
	}
	if max >= 0xb {
		if _, b, _, _ := cpuid(0xb, 0); b&0xffff != 0 {
			m.set(capXTopology)
		}
	}
	if intel && m.Family == 6 || amd && m.Family >= 0x10 {
		m.set(capRepGood)
	}
	if intel && max >= 0xa {
		if a, _, _, _ := cpuid(0xa, 0); a&0xff != 0 && a>>8&0xff > 1 {
			m.set(capArchPerf)
		}
	}
	if max >= 0x15 {
		if _, b, c, _ := cpuid(0x15, 0); b != 0 && c != 0 {
			m.set(capTSCKnown)
		}
	}
	if d7 := m.Caps[18]; d7&(1<<26) != 0 {
		m.set(capIBRS)
		m.set(capIBPB)
	}
	if m.Caps[18]&(1<<27) != 0 {
		m.set(capSTIBP)
	}
	if m.Caps[18]&(1<<31) != 0 || m.Caps[13]&(3<<24) != 0 {
		m.set(capSSBD)
	}
	if m.Caps[13]&(1<<24) != 0 {
		m.Caps[13] &^= 1 << 25 // AMD's SSBD in SPEC_CTRL: Linux drops virt_ssbd
	}
	if b := m.Caps[13]; b&(1<<12) != 0 {
		m.set(capIBPB)
	}
	if m.Caps[13]&(1<<14) != 0 {
		m.set(capIBRS)
	}
	if m.Caps[13]&(1<<15) != 0 {
		m.set(capSTIBP)
	}

	// What the kernel does not enable.
	if xcr0 == 0 {
		m.clear(capXSAVE)
	}
	if xcr0&xstateYMM == 0 {
		m.clear(capAVX)
	}
	if xcr0&xstateAVX512 != xstateAVX512 {
		m.clear(capAVX512F)
	}
	if xcr0&xstateTile != xstateTile {
		m.clear(capAMXTile)
	}
	for _, c := range [...]uint16{capLA57, capPKU, capOSPKE, capIBT, capLAM, capFRED, capENQCMD, capSGX, capSGXLC} {
		m.clear(c)
	}

	m.CacheKB = cacheKB(cpuid, max, ext, amd)
	if amd && ext >= 0x80000006 {
		// Linux's x86_tlbsize (cpu_detect_cache_sizes, 64-bit): the L2
		// data and instruction TLBs' 4 KiB entries.
		_, b, _, _ := cpuid(0x80000006, 0)
		m.TLBSize = b>>16&0xfff + b&0xfff
	}
}

// cacheKB is cpuinfo's cache size: AMD's L2 (CPUID 0x80000006), else the
// largest level CPUID leaf 4 describes (Linux's l3, else l2).
func cacheKB(cpuid func(leaf, sub uint32) (a, b, c, d uint32), max, ext uint32, amd bool) uint32 {
	if amd {
		if ext < 0x80000006 {
			return 0
		}
		_, _, c, _ := cpuid(0x80000006, 0)
		return c >> 16
	}
	if max < 4 {
		return 0
	}
	var kb [4]uint32
	for i := uint32(0); i < 16; i++ {
		a, b, c, _ := cpuid(4, i)
		typ := a & 0x1f
		if typ == 0 {
			break
		}
		level := a >> 5 & 7
		size := (b>>22 + 1) * (b>>12&0x3ff + 1) * (b&0xfff + 1) * (c + 1) / 1024
		if level < 4 && typ != 2 { // data and unified caches
			kb[level] += size
		}
	}
	for l := 3; l >= 1; l-- {
		if kb[l] != 0 {
			return kb[l]
		}
	}
	return 0
}

func putLE(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// trimName removes the brand string's leading and trailing spaces, as
// get_model_name.
func trimName(n *[48]byte) {
	i := 0
	for i < len(n) && n[i] == ' ' {
		i++
	}
	copy(n[:], n[i:])
	for k := len(n) - i; k < len(n); k++ {
		n[k] = 0
	}
	for k := len(n) - 1; k >= 0 && (n[k] == 0 || n[k] == ' '); k-- {
		n[k] = 0
	}
}

// x86Flags are the capability bits cpuinfo names, in Linux's order
// (arch/x86/include/asm/cpufeatures.h: the quoted names; a bit without
// one is not shown).
var x86Flags = [...]struct {
	bit  uint16
	name string
}{
	{0, "fpu"}, {1, "vme"}, {2, "de"}, {3, "pse"}, {4, "tsc"}, {5, "msr"}, {6, "pae"}, {7, "mce"},
	{8, "cx8"}, {9, "apic"}, {11, "sep"}, {12, "mtrr"}, {13, "pge"}, {14, "mca"}, {15, "cmov"},
	{16, "pat"}, {17, "pse36"}, {18, "pn"}, {19, "clflush"}, {21, "dts"}, {22, "acpi"}, {23, "mmx"},
	{24, "fxsr"}, {25, "sse"}, {26, "sse2"}, {27, "ss"}, {28, "ht"}, {29, "tm"}, {30, "ia64"}, {31, "pbe"},

	{32 + 11, "syscall"}, {32 + 19, "mp"}, {32 + 20, "nx"}, {32 + 22, "mmxext"}, {32 + 25, "fxsr_opt"},
	{32 + 26, "pdpe1gb"}, {32 + 27, "rdtscp"}, {32 + 29, "lm"}, {32 + 30, "3dnowext"}, {32 + 31, "3dnow"},

	{capConstTSC, "constant_tsc"}, {capArchPerf, "arch_perfmon"}, {capRepGood, "rep_good"},
	{capNOPL, "nopl"}, {capXTopology, "xtopology"}, {capNonstopTSC, "nonstop_tsc"},
	{capCPUID, "cpuid"}, {capTSCKnown, "tsc_known_freq"},

	{128 + 0, "pni"}, {128 + 1, "pclmulqdq"}, {128 + 2, "dtes64"}, {128 + 3, "monitor"}, {128 + 4, "ds_cpl"},
	{128 + 5, "vmx"}, {128 + 6, "smx"}, {128 + 7, "est"}, {128 + 8, "tm2"}, {128 + 9, "ssse3"},
	{128 + 10, "cid"}, {128 + 11, "sdbg"}, {128 + 12, "fma"}, {128 + 13, "cx16"}, {128 + 14, "xtpr"},
	{128 + 15, "pdcm"}, {128 + 17, "pcid"}, {128 + 18, "dca"}, {128 + 19, "sse4_1"}, {128 + 20, "sse4_2"},
	{128 + 21, "x2apic"}, {128 + 22, "movbe"}, {128 + 23, "popcnt"}, {128 + 24, "tsc_deadline_timer"},
	{128 + 25, "aes"}, {128 + 26, "xsave"}, {128 + 28, "avx"}, {128 + 29, "f16c"}, {128 + 30, "rdrand"},
	{128 + 31, "hypervisor"},

	{192 + 0, "lahf_lm"}, {192 + 1, "cmp_legacy"}, {192 + 2, "svm"}, {192 + 3, "extapic"},
	{192 + 4, "cr8_legacy"}, {192 + 5, "abm"}, {192 + 6, "sse4a"}, {192 + 7, "misalignsse"},
	{192 + 8, "3dnowprefetch"}, {192 + 9, "osvw"}, {192 + 10, "ibs"}, {192 + 11, "xop"},
	{192 + 12, "skinit"}, {192 + 13, "wdt"}, {192 + 15, "lwp"}, {192 + 16, "fma4"}, {192 + 17, "tce"},
	{192 + 19, "nodeid_msr"}, {192 + 21, "tbm"}, {192 + 22, "topoext"}, {192 + 23, "perfctr_core"},
	{192 + 24, "perfctr_nb"}, {192 + 26, "bpext"}, {192 + 27, "ptsc"}, {192 + 28, "perfctr_llc"},
	{192 + 29, "mwaitx"},

	{capSSBD, "ssbd"}, {capIBRS, "ibrs"}, {capIBPB, "ibpb"}, {capSTIBP, "stibp"},

	{288 + 0, "fsgsbase"}, {288 + 1, "tsc_adjust"}, {288 + 2, "sgx"}, {288 + 3, "bmi1"}, {288 + 4, "hle"},
	{288 + 5, "avx2"}, {288 + 7, "smep"}, {288 + 8, "bmi2"}, {288 + 9, "erms"}, {288 + 10, "invpcid"},
	{288 + 11, "rtm"}, {288 + 12, "cqm"}, {288 + 14, "mpx"}, {288 + 15, "rdt_a"}, {288 + 16, "avx512f"},
	{288 + 17, "avx512dq"}, {288 + 18, "rdseed"}, {288 + 19, "adx"}, {288 + 20, "smap"},
	{288 + 21, "avx512ifma"}, {288 + 23, "clflushopt"}, {288 + 24, "clwb"}, {288 + 25, "intel_pt"},
	{288 + 26, "avx512pf"}, {288 + 27, "avx512er"}, {288 + 28, "avx512cd"}, {288 + 29, "sha_ni"},
	{288 + 30, "avx512bw"}, {288 + 31, "avx512vl"},

	{320 + 0, "xsaveopt"}, {320 + 1, "xsavec"}, {320 + 2, "xgetbv1"}, {320 + 3, "xsaves"},

	{384 + 4, "avx_vnni"}, {384 + 5, "avx512_bf16"}, {384 + 17, "fred"}, {384 + 26, "lam"},

	{416 + 0, "clzero"}, {416 + 1, "irperf"}, {416 + 2, "xsaveerptr"}, {416 + 4, "rdpru"},
	{416 + 9, "wbnoinvd"}, {416 + 23, "amd_ppin"}, {416 + 25, "virt_ssbd"}, {416 + 27, "cppc"},
	{416 + 31, "brs"},

	{448 + 0, "dtherm"}, {448 + 1, "ida"}, {448 + 2, "arat"}, {448 + 4, "pln"}, {448 + 6, "pts"},
	{448 + 7, "hwp"}, {448 + 8, "hwp_notify"}, {448 + 9, "hwp_act_window"}, {448 + 10, "hwp_epp"},
	{448 + 11, "hwp_pkg_req"}, {448 + 19, "hfi"},

	{512 + 1, "avx512vbmi"}, {512 + 2, "umip"}, {512 + 3, "pku"}, {512 + 4, "ospke"}, {512 + 5, "waitpkg"},
	{512 + 6, "avx512_vbmi2"}, {512 + 8, "gfni"}, {512 + 9, "vaes"}, {512 + 10, "vpclmulqdq"},
	{512 + 11, "avx512_vnni"}, {512 + 12, "avx512_bitalg"}, {512 + 13, "tme"}, {512 + 14, "avx512_vpopcntdq"},
	{512 + 16, "la57"}, {512 + 22, "rdpid"}, {512 + 24, "bus_lock_detect"}, {512 + 25, "cldemote"},
	{512 + 27, "movdiri"}, {512 + 28, "movdir64b"}, {512 + 29, "enqcmd"}, {512 + 30, "sgx_lc"},

	{544 + 0, "overflow_recov"}, {544 + 1, "succor"}, {544 + 3, "smca"},

	{576 + 2, "avx512_4vnniw"}, {576 + 3, "avx512_4fmaps"}, {576 + 4, "fsrm"}, {576 + 8, "avx512_vp2intersect"},
	{576 + 10, "md_clear"}, {576 + 14, "serialize"}, {576 + 16, "tsxldtrk"}, {576 + 18, "pconfig"},
	{576 + 19, "arch_lbr"}, {576 + 20, "ibt"}, {576 + 22, "amx_bf16"}, {576 + 23, "avx512_fp16"},
	{576 + 24, "amx_tile"}, {576 + 25, "amx_int8"}, {576 + 28, "flush_l1d"}, {576 + 29, "arch_capabilities"},
}
