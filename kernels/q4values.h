// q4values: the floats −8…7, the value of each Q4_0 nibble, for VPERMPS
// lookups (its index is a dword's low four bits). File-local (<>): each
// assembly file that includes this gets its own 64-byte copy.
DATA q4values<>+0(SB)/4, $0xc1000000
DATA q4values<>+4(SB)/4, $0xc0e00000
DATA q4values<>+8(SB)/4, $0xc0c00000
DATA q4values<>+12(SB)/4, $0xc0a00000
DATA q4values<>+16(SB)/4, $0xc0800000
DATA q4values<>+20(SB)/4, $0xc0400000
DATA q4values<>+24(SB)/4, $0xc0000000
DATA q4values<>+28(SB)/4, $0xbf800000
DATA q4values<>+32(SB)/4, $0x00000000
DATA q4values<>+36(SB)/4, $0x3f800000
DATA q4values<>+40(SB)/4, $0x40000000
DATA q4values<>+44(SB)/4, $0x40400000
DATA q4values<>+48(SB)/4, $0x40800000
DATA q4values<>+52(SB)/4, $0x40a00000
DATA q4values<>+56(SB)/4, $0x40c00000
DATA q4values<>+60(SB)/4, $0x40e00000
GLOBL q4values<>(SB), RODATA|NOPTR, $64
