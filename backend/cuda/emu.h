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
unsigned emu_ballot(bool pred);
inline unsigned __ballot_sync(unsigned, bool pred) { return emu_ballot(pred); }

void __syncthreads();
float emu_shfl_xor(float v, int o);
double emu_shfl_xor(double v, int o);
inline float __shfl_xor_sync(unsigned, float v, int o) { return emu_shfl_xor(v, o); }
inline double __shfl_xor_sync(unsigned, double v, int o) { return emu_shfl_xor(v, o); }

using std::max;
using std::min;
