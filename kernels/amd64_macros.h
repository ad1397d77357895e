// Macros shared by the amd64 kernel files (avx2_amd64.s, avx512_amd64.s,
// vnni_amd64.s), included by each. Only #define lines: no code or data.

// Horizontal sum of Y0 into X0[0].
#define HSUM VEXTRACTF128 $1, Y0, X1; VADDPS X1, X0, X0; VHADDPS X0, X0, X0; VHADDPS X0, X0, X0

// Sum of Z0 and Z1 into X0[0].
#define HSUMZ VADDPS Z1, Z0, Z0; VEXTRACTF64X4 $1, Z0, Y1; VADDPS Y1, Y0, Y0; HSUM

// ACCROWLD and ACCROWST load and store one token's 64 accumulators.
#define ACCROWLD(base, a0, a1, a2, a3) \
	VMOVUPS 0(base), a0; \
	VMOVUPS 64(base), a1; \
	VMOVUPS 128(base), a2; \
	VMOVUPS 192(base), a3

#define ACCROWST(base, a0, a1, a2, a3) \
	VMOVUPS a0, 0(base); \
	VMOVUPS a1, 64(base); \
	VMOVUPS a2, 128(base); \
	VMOVUPS a3, 192(base)
