// emu.h: just enough of CUDA C++ for kernels/sipack.cu to compile as
// host C++ and run on the CPU (build tag cudaemu: the rehearsal driver).
// Blocks run one at a time; the threads of a block run as cooperative
// fibers on one OS thread, switched at __syncthreads and at warp shuffles,
// so block-shared memory is a static and barriers are exact.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct emu_dim3 { unsigned x, y, z; };
extern emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

struct uint4 { unsigned x, y, z, w; };
struct float4 { float x, y, z, w; };

inline float __uint_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
// Fibers switch only at barriers and shuffles, so a read-modify-write is atomic.
inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline int atomicAdd(int* p, int v) { int o = *p; *p = o + v; return o; }
// Blocks run one at a time: memory is ordered without a fence.
inline void __threadfence() {}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
unsigned emu_thread(); // the running thread's index in its block
unsigned emu_ballot(bool pred);
inline unsigned __ballot_sync(unsigned, bool pred) { return emu_ballot(pred); }

void __syncthreads();
float emu_shfl_xor(float v, int o);
double emu_shfl_xor(double v, int o);
inline float __shfl_xor_sync(unsigned, float v, int o) { return emu_shfl_xor(v, o); }
inline double __shfl_xor_sync(unsigned, double v, int o) { return emu_shfl_xor(v, o); }

using std::max;
using std::min;

// 16-bit floats as the tensor-core GEMM tiles hold them: rounded to
// nearest even (bf16 by its top bits; half as kernels.F32ToF16 rounds).
struct __nv_bfloat16 { uint16_t x; };
struct __half { uint16_t x; };
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40u)};
    return {uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
inline __half __float2half_rn(float f) {
    uint32_t x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return {uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu))};
    if (ax >= 0x477ff000u) return {uint16_t(sign | 0x7c00u)};
    if (ax >= 0x38800000u) {
        uint32_t r = ax - 0x38000000u;
        return {uint16_t(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13))};
    }
    if (ax < 0x33000000u) return {uint16_t(sign)};
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return {uint16_t(sign | q)};
}
inline float emu_float(__nv_bfloat16 b) { return __uint_as_float(uint32_t(b.x) << 16); }
inline float emu_float(__half h) {
    uint32_t sign = uint32_t(h.x >> 15) << 31, exp = (h.x >> 10) & 0x1f, man = h.x & 0x3ff;
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp != 0) return __uint_as_float(sign | ((exp + 112) << 23) | (man << 13));
    float f = (float)man * (1.0f / 16777216.0f);
    return sign ? -f : f;
}

// The warp matrix operations of <mma.h> at the 16×16×16 shape. A fragment
// holds its whole tile and a warp's first thread does the work: the kernels
// only fill, load, multiply and store whole fragments, so the other
// threads' copies are never read.
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class L = void>
struct fragment {
    float v[M * N];
};
inline bool emu_lane0() { return emu_thread() % 32 == 0; }
inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float v) {
    if (emu_lane0()) std::fill(f.v, f.v + 256, v);
}
template <class T>
inline void load_matrix_sync(fragment<matrix_a, 16, 16, 16, T, row_major>& f, const T* p, unsigned ldm) {
    if (!emu_lane0()) return;
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 16; k++) f.v[r * 16 + k] = emu_float(p[r * ldm + k]);
}
template <class T>
inline void load_matrix_sync(fragment<matrix_b, 16, 16, 16, T, col_major>& f, const T* p, unsigned ldm) {
    if (!emu_lane0()) return;
    for (int n = 0; n < 16; n++)
        for (int k = 0; k < 16; k++) f.v[k * 16 + n] = emu_float(p[n * ldm + k]);
}
template <class T>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, row_major>& a,
                     const fragment<matrix_b, 16, 16, 16, T, col_major>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
    if (!emu_lane0()) return;
    float out[256];
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float s = c.v[m * 16 + n];
            for (int k = 0; k < 16; k++) s += a.v[m * 16 + k] * b.v[k * 16 + n];
            out[m * 16 + n] = s;
        }
    std::memcpy(d.v, out, sizeof out);
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t) {
    if (!emu_lane0()) return;
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) p[m * ldm + n] = f.v[m * 16 + n];
}
}  // namespace wmma
}  // namespace nvcuda
