// sipack CUDA kernels: the operations of the backend seam (backend/backend.go)
// over weights in their stored dtype (f32, f16, bf16, GGUF-style Q8_0 and
// Q4_0 blocks of 32, as format/dtype.go lays them out), math in float32.
// Every kernel's reference is the CPU backend (backend/cpu) over the kernel
// table's pure-Go references (kernels.Generic); the tagged tests in
// backend/cuda compare the two on random shapes with ragged tails.
//
// Built by `make cuda-kernels` into sipack.fatbin (SASS for sm_87 and sm_90,
// PTX for compute_80); loaded through the driver API. The launch shapes and
// tile sizes below are mirrored by package cudaplan (its test reads this
// file and checks every SIP_ constant).
//
// Records: an FFN neuron record is gate row | up row | down column, each H
// values of rowBytes bytes. A record set is a device table of record
// addresses (one 64-bit pointer per record), so a decode set is the static
// prefix and the voted ranks gathered by address, in place.

#include <stdint.h>
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#endif

#define SIP_F32 0
#define SIP_F16 1
#define SIP_BF16 2
#define SIP_Q8_0 8
#define SIP_Q4_0 9

#define SIP_QK 32           // weights per quantisation block
#define SIP_WARPS 8         // warps per block of the warp-per-row kernels
#define SIP_TILE_M 64       // tiled GEMM: output rows per block
#define SIP_TILE_N 32       // tiled GEMM: tokens per block
#define SIP_TILE_K 32       // tiled GEMM: reduction step (one quant block)
#define SIP_GEMM_THREADS 256
#define SIP_DOWN_THREADS 128 // split-K down projection: threads per block
#define SIP_ATT_THREADS 128  // attention: threads per (token, head)
#define SIP_ATT_CHUNK 32     // attention: keys scored per step
#define SIP_MAX_HEAD_DIM 256
#define SIP_EW_THREADS 256   // element-wise kernels
#define SIP_VOTE_THREADS 256 // voting: threads per token
#define SIP_NORM_MAX 8192    // fused RMSNorm prologue: most values staged in shared memory
#define SIP_TOPK_THREADS 1024 // sip_topk: one block
#define SIP_TOPK_MAX 256     // sip_topk: the most candidates

// ---- element access ------------------------------------------------------

__device__ __forceinline__ float bf16f(uint16_t h) { return __uint_as_float(((uint32_t)h) << 16); }

// f16 widening by bits (exact, subnormals included), as kernels.F16ToF32.
__device__ __forceinline__ float f16f(uint16_t h) {
    uint32_t sign = ((uint32_t)(h >> 15)) << 31;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp != 0) return __uint_as_float(sign | ((exp + 112) << 23) | (man << 13));
    float f = (float)man * (1.0f / 16777216.0f);
    return sign ? -f : f;
}

__device__ __forceinline__ uint16_t ld16(const uint8_t* p) { return *(const uint16_t*)p; }

// elem returns element c of a row of dtype DT (rows are at least 2-byte
// aligned; f32 rows 4-byte aligned).
template <int DT>
__device__ __forceinline__ float elem(const uint8_t* row, int c) {
    if (DT == SIP_F32) return ((const float*)row)[c];
    if (DT == SIP_F16) return f16f(ld16(row + 2 * c));
    if (DT == SIP_BF16) return bf16f(ld16(row + 2 * c));
    if (DT == SIP_Q8_0) {
        const uint8_t* b = row + (c / SIP_QK) * 34;
        return f16f(ld16(b)) * (float)(int8_t)b[2 + c % SIP_QK];
    }
    // Q4_0: byte j holds q[j] low, q[j+16] high.
    const uint8_t* b = row + (c / SIP_QK) * 18;
    int j = c % SIP_QK;
    int q = j < 16 ? (b[2 + j] & 15) : (b[2 + j - 16] >> 4);
    return f16f(ld16(b)) * (float)(q - 8);
}

// widen8 widens 8 consecutive 16-bit values loaded as one 16-byte vector.
template <int DT>
__device__ __forceinline__ void widen8(uint4 v, float* o) {
    uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint16_t lo = (uint16_t)(w[i] & 0xffff), hi = (uint16_t)(w[i] >> 16);
        o[2 * i] = DT == SIP_BF16 ? bf16f(lo) : f16f(lo);
        o[2 * i + 1] = DT == SIP_BF16 ? bf16f(hi) : f16f(hi);
    }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// dot_lane is one lane's share of row·x over n elements; the warp's sum is
// the dot. vec: 16-bit rows and x are 16-byte aligned and n % 8 == 0 (f32:
// n % 4 == 0), so each lane loads 16 bytes at a time, consecutive lanes
// consecutive chunks (coalesced along the hidden dimension).
template <int DT>
__device__ __forceinline__ float dot_lane(const uint8_t* row, const float* x, int n, int lane, int vec) {
    float s = 0.f;
    if (DT == SIP_Q8_0 || DT == SIP_Q4_0) {
        // Eight lanes to a block of 32 weights, four values a lane, four
        // blocks a step: the warp reads four blocks' bytes together and x
        // as 512 contiguous bytes (coalesced; in shared memory, by 16-byte
        // loads, free of bank conflicts). A lane owning whole blocks read
        // x 128 bytes apart: 32 lanes on one shared-memory bank.
        const int sub = lane & 7;
        const bool x16 = (((uintptr_t)x) & 15) == 0;
        for (int b = lane >> 3; b < n / SIP_QK; b += 4) {
            const float* xs = x + b * SIP_QK + 4 * sub;
            float x0, x1, x2, x3;
            if (x16) {
                float4 v = *(const float4*)xs;
                x0 = v.x, x1 = v.y, x2 = v.z, x3 = v.w;
            } else {
                x0 = xs[0], x1 = xs[1], x2 = xs[2], x3 = xs[3];
            }
            const uint8_t* blk;
            float bs;
            if (DT == SIP_Q8_0) {
                blk = row + b * 34;
                uint16_t a = ld16(blk + 2 + 4 * sub), c = ld16(blk + 4 + 4 * sub);
                bs = (float)(int8_t)(a & 0xff) * x0 + (float)(int8_t)(a >> 8) * x1 + (float)(int8_t)(c & 0xff) * x2 +
                     (float)(int8_t)(c >> 8) * x3;
            } else {
                // Values 4·sub.. : the low nibbles of bytes 4·sub.. for
                // sub < 4, the high nibbles of bytes 4·(sub − 4).. after.
                blk = row + b * 18;
                int sh = (sub >> 2) * 4;
                uint16_t a = ld16(blk + 2 + 4 * (sub & 3)), c = ld16(blk + 4 + 4 * (sub & 3));
                bs = (float)(((a >> sh) & 15) - 8) * x0 + (float)(((a >> (8 + sh)) & 15) - 8) * x1 +
                     (float)(((c >> sh) & 15) - 8) * x2 + (float)(((c >> (8 + sh)) & 15) - 8) * x3;
            }
            s += f16f(ld16(blk)) * bs;
        }
        return s;
    }
    if (vec && DT == SIP_F32) {
        const float4* r4 = (const float4*)row;
        const float4* x4 = (const float4*)x;
        for (int c = lane; c < n / 4; c += 32) {
            float4 w = r4[c], xv = x4[c];
            s += w.x * xv.x + w.y * xv.y + w.z * xv.z + w.w * xv.w;
        }
        return s;
    }
    if (vec) {
        const uint4* r8 = (const uint4*)row;
        const float4* x4 = (const float4*)x;
        for (int c = lane; c < n / 8; c += 32) {
            float w[8];
            widen8<DT>(r8[c], w);
            float4 a = x4[2 * c], b = x4[2 * c + 1];
            s += w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * b.x + w[5] * b.y + w[6] * b.z + w[7] * b.w;
        }
        return s;
    }
    for (int c = lane; c < n; c += 32) s += elem<DT>(row, c) * x[c];
    return s;
}

__device__ __forceinline__ float silu(float g) { return g / (1.f + expf(-g)); }

#define SIP_DISPATCH(dt, CALL)                      \
    switch (dt) {                                   \
    case SIP_F32: CALL(SIP_F32); break;             \
    case SIP_F16: CALL(SIP_F16); break;             \
    case SIP_BF16: CALL(SIP_BF16); break;           \
    case SIP_Q8_0: CALL(SIP_Q8_0); break;           \
    case SIP_Q4_0: CALL(SIP_Q4_0); break;           \
    }

// ---- embedding, norms, element-wise ---------------------------------------

// sip_embed: out[t, c] = table[tokens[t], c] widened. grid (⌈cols/256⌉, T), block 256.
extern "C" __global__ void sip_embed(float* out, const uint8_t* table, const int* tokens, int cols, int rowBytes, int dt) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y;
    if (c >= cols) return;
    const uint8_t* row = table + (size_t)tokens[t] * rowBytes;
    float v = 0.f;
#define E(D) v = elem<D>(row, c)
    SIP_DISPATCH(dt, E)
#undef E
    out[(size_t)t * cols + c] = v;
}

// rms_scale is 1 / sqrt(mean(x²) + eps) of a row of n, the sum of squares
// in double as the CPU reference, in one order for a block of 256 threads
// (sip_rmsnorm and norm_stage agree bit for bit). Every thread must call it.
__device__ float rms_scale(const float* x, int n, float eps) {
    __shared__ double part[SIP_EW_THREADS / 32];
    double ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)x[i] * (double)x[i];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int i = 0; i < (int)(blockDim.x >> 5); i++) t += part[i];
        part[0] = t;
    }
    __syncthreads();
    float scale = (float)(1.0 / sqrt(part[0] / n + (double)eps));
    __syncthreads(); // part is reused by the next call
    return scale;
}

// sip_rmsnorm: out_t = x_t / sqrt(mean(x_t²) + eps) ⊙ w. grid T, block 256.
extern "C" __global__ void sip_rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
    const float* xs = x + (size_t)blockIdx.x * n;
    float* os = out + (size_t)blockIdx.x * n;
    float scale = rms_scale(xs, n, eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) os[i] = xs[i] * scale * w[i];
}

// norm_stage is sip_rmsnorm of one row as the prologue of a decode kernel:
// xs (shared) = x / sqrt(mean(x²) + eps) ⊙ w, computed by every block (the
// row is in L2), bit-identical to sip_rmsnorm; block 0 also stores it to
// out (may be null). Every thread must call it.
__device__ void norm_stage(float* xs, const float* x, const float* w, int n, float eps, float* out) {
    float scale = rms_scale(x, n, eps);
    bool store = out != 0 && blockIdx.x == 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[i] * scale * w[i];
        xs[i] = v;
        if (store) out[i] = v;
    }
    __syncthreads();
}

// sip_add_bias: x[i] += b[i % n] over total values. sip_add: x += y.
// grid ⌈total/256⌉, block 256.
extern "C" __global__ void sip_add_bias(float* x, const float* b, int n, int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) x[i] += b[i % n];
}

extern "C" __global__ void sip_add(float* x, const float* y, int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) x[i] += y[i];
}

// sip_rope: HF rotate_half over every head of x (T, n), token t at position
// pos+t; angle float32(pos+t)·invFreq[i] in float32, cos and sin in double
// as the CPU reference. The position is read from device memory (*posp),
// so a decode step's launches do not change from step to step (CUDA
// graphs). grid (n/headDim, T), block 64.
extern "C" __global__ void sip_rope(float* x, const float* invFreq, int n, int headDim, const int* posp) {
    int t = blockIdx.y, h = blockIdx.x, half = headDim / 2, pos = *posp;
    float* v = x + (size_t)t * n + (size_t)h * headDim;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float a = (float)(pos + t) * invFreq[i];
        float c = (float)cos((double)a), s = (float)sin((double)a);
        float p = v[i], q = v[i + half];
        v[i] = p * c - q * s;
        v[i + half] = q * c + p * s;
    }
}

// ---- matrix-vector and tiled GEMM -----------------------------------------

// sip_matvec: out[t, r] = W[r, :] · x[t, :], one warp per row.
// grid (⌈rows/8⌉, T), block 256.
extern "C" __global__ void sip_matvec(float* out, const uint8_t* W, const float* x, int rows, int cols, int rowBytes, int dt, int vec) {
    int lane = threadIdx.x & 31;
    int r = blockIdx.x * SIP_WARPS + (threadIdx.x >> 5), t = blockIdx.y;
    if (r >= rows) return;
    const uint8_t* row = W + (size_t)r * rowBytes;
    const float* xt = x + (size_t)t * cols;
    float s = 0.f;
#define D(DT) s = dot_lane<DT>(row, xt, cols, lane, vec)
    SIP_DISPATCH(dt, D)
#undef D
    s = warp_sum(s);
    if (lane == 0) out[(size_t)t * rows + r] = s;
}

// sip_matvec_fused: one decode token's matvecs in one launch: out_m[r] =
// W_m[r, :] · x for up to three matrices of the same dtype and width (q, k
// and v; rows_m = 0 leaves one out), a warp per row. When normW is set, x
// is first RMS-normalised by norm_stage (normOut gets the normalised row);
// when addTo is set, addTo[r] += out_0[r] too (the residual add after o_proj).
// grid ⌈(rows0+rows1+rows2)/8⌉, block 256.
extern "C" __global__ void sip_matvec_fused(float* out0, float* out1, float* out2, const uint8_t* W0, const uint8_t* W1, const uint8_t* W2,
                                            int rows0, int rows1, int rows2, const float* x, int cols, int rowBytes, int dt, int vec,
                                            const float* normW, float* normOut, float eps, float* addTo) {
    __shared__ __align__(16) float xs[SIP_NORM_MAX];
    const float* xp = x;
    if (normW) {
        norm_stage(xs, x, normW, cols, eps, normOut);
        xp = xs;
    }
    int lane = threadIdx.x & 31;
    int r = blockIdx.x * SIP_WARPS + (threadIdx.x >> 5);
    float* out = out0;
    const uint8_t* W = W0;
    if (r >= rows0) {
        r -= rows0, out = out1, W = W1;
        if (r >= rows1) r -= rows1, out = out2, W = W2;
        if (out == out2 && r >= rows2) return;
    }
    const uint8_t* row = W + (size_t)r * rowBytes;
    float s = 0.f;
#define D(DT) s = dot_lane<DT>(row, xp, cols, lane, vec)
    SIP_DISPATCH(dt, D)
#undef D
    s = warp_sum(s);
    if (lane == 0) {
        out[r] = s;
        if (addTo) addTo[r] += s;
    }
}

// gemm_tile accumulates one 64×32 output tile: acc[i][j] += Σ_k A(m, k)·B(k, n)
// for rows m = ty·4+i and tokens n = tx·2+j, A loaded by loadA(m, k) (0
// outside), B by loadB(n, k), K in steps of 32. Weights of 16 bits or
// fewer go through the tensor cores: each of the 8 warps multiplies one
// 16×16 piece of the tile (warp matrix operations, half for f16 packs, bf16
// otherwise, both operands rounded to nearest even, products summed in
// float32); f32 weights, and every dtype when tc is 0 (the exact path the
// goldens are checked on), keep float32 on the CUDA cores.
// The tiles live in the kernel's shared memory (declared once per kernel:
// declared here they would be allocated once per dtype instantiation).
constexpr int kTcLd = SIP_TILE_K + 8; // 16-bit tile rows: 80 bytes, fragments 32-byte aligned
constexpr int kTcCLd = SIP_TILE_N + 4;
struct FloatTiles {
    float A[SIP_TILE_K][SIP_TILE_M + 1];
    float B[SIP_TILE_K][SIP_TILE_N + 1];
};
struct TcTiles {
    __align__(32) uint16_t A[SIP_TILE_M][kTcLd]; // A(m, k)
    __align__(32) uint16_t B[SIP_TILE_N][kTcLd]; // B(k, n), token n's row
    __align__(32) float C[SIP_TILE_M][kTcCLd];
};
struct Tiles {
    union {
        FloatTiles f;
        TcTiles t;
    } u;
};

// TC is the tensor cores' operand type for weights of dtype DT: half for
// f16 weights (held exactly, the activations in the model's own type);
// bf16 for the others: a BF16 pack's weights exactly, a quantised block's
// scaled values to 8 significant bits (finer than their quantisation), and
// the activations in float32's range (half overflows past 65504) rounded
// as the CPU's BF16 prefill rounds them.
template <int DT>
struct TC {
    typedef __nv_bfloat16 T;
    static __device__ __forceinline__ T of(float f) { return __float2bfloat16_rn(f); }
};
template <>
struct TC<SIP_F16> {
    typedef __half T;
    static __device__ __forceinline__ T of(float f) { return __float2half_rn(f); }
};

// load_tiles loads one k-step (k0..k0+31) of the tiles: storeA(m, k, A(m,
// k0 + k)) and storeB(n, k, B(k0 + k, n)), 0 past K. kOuter: consecutive
// threads load consecutive m of one k (A's rows are the records' down
// columns, contiguous along m); otherwise consecutive k of one m (a weight
// row, contiguous along k). Either way a warp's loads are coalesced.
template <bool kOuter, typename LA, typename LB, typename SA, typename SB>
__device__ __forceinline__ void load_tiles(int k0, int K, LA loadA, LB loadB, SA storeA, SB storeB) {
    int tid = threadIdx.x;
#pragma unroll
    for (int e = 0; e < SIP_TILE_M * SIP_TILE_K / SIP_GEMM_THREADS; e++) {
        int idx = tid + e * SIP_GEMM_THREADS;
        int m = kOuter ? idx % SIP_TILE_M : idx / SIP_TILE_K, k = kOuter ? idx / SIP_TILE_M : idx % SIP_TILE_K;
        storeA(m, k, k0 + k < K ? loadA(m, k0 + k) : 0.f);
    }
#pragma unroll
    for (int e = 0; e < SIP_TILE_N * SIP_TILE_K / SIP_GEMM_THREADS; e++) {
        int idx = tid + e * SIP_GEMM_THREADS, n = idx / SIP_TILE_K, k = idx % SIP_TILE_K;
        storeB(n, k, k0 + k < K ? loadB(n, k0 + k) : 0.f);
    }
}

template <int DT, bool kOuter, typename LA, typename LB>
__device__ __forceinline__ void gemm_tile(Tiles& sm, float acc[4][2], int K, int tc, LA loadA, LB loadB) {
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    if (DT == SIP_F32 || !tc) {
        float(*As)[SIP_TILE_M + 1] = sm.u.f.A;
        float(*Bs)[SIP_TILE_N + 1] = sm.u.f.B;
        for (int k0 = 0; k0 < K; k0 += SIP_TILE_K) {
            load_tiles<kOuter>(k0, K, loadA, loadB, [&](int m, int k, float v) { As[k][m] = v; }, [&](int n, int k, float v) { Bs[k][n] = v; });
            __syncthreads();
#pragma unroll 8
            for (int k = 0; k < SIP_TILE_K; k++) {
                float a[4], b[2];
#pragma unroll
                for (int i = 0; i < 4; i++) a[i] = As[k][ty * 4 + i];
                b[0] = Bs[k][tx * 2];
                b[1] = Bs[k][tx * 2 + 1];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    acc[i][0] += a[i] * b[0];
                    acc[i][1] += a[i] * b[1];
                }
            }
            __syncthreads();
        }
        return;
    }
    namespace wmma = nvcuda::wmma;
    typedef typename TC<DT>::T E;
    E(*As)[kTcLd] = (E(*)[kTcLd])sm.u.t.A;
    E(*Bs)[kTcLd] = (E(*)[kTcLd])sm.u.t.B;
    int warp = tid >> 5, fm = warp >> 1, fn = warp & 1; // this warp's 16×16 piece
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.f);
    for (int k0 = 0; k0 < K; k0 += SIP_TILE_K) {
        load_tiles<kOuter>(
            k0, K, loadA, loadB, [&](int m, int k, float v) { As[m][k] = TC<DT>::of(v); }, [&](int n, int k, float v) { Bs[n][k] = TC<DT>::of(v); });
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < SIP_TILE_K; ks += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major> b;
            wmma::load_matrix_sync(a, &As[16 * fm][ks], kTcLd);
            wmma::load_matrix_sync(b, &Bs[16 * fn][ks], kTcLd);
            wmma::mma_sync(c, a, b, c);
        }
        __syncthreads();
    }
    wmma::store_matrix_sync(&sm.u.t.C[16 * fm][16 * fn], c, kTcCLd, wmma::mem_row_major);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 4; i++) {
        acc[i][0] += sm.u.t.C[ty * 4 + i][tx * 2];
        acc[i][1] += sm.u.t.C[ty * 4 + i][tx * 2 + 1];
    }
}

template <int DT>
__device__ void matmul_tiled(Tiles& sm, float* out, const uint8_t* W, const float* x, int rows, int cols, int rowBytes, int T, int tc) {
    int r0 = blockIdx.x * SIP_TILE_M, t0 = blockIdx.y * SIP_TILE_N;
    float acc[4][2] = {};
    gemm_tile<DT, false>(
        sm, acc, cols, tc,
        [&](int m, int k) { return r0 + m < rows ? elem<DT>(W + (size_t)(r0 + m) * rowBytes, k) : 0.f; },
        [&](int n, int k) { return t0 + n < T ? x[(size_t)(t0 + n) * cols + k] : 0.f; });
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int r = r0 + ty * 4 + i, t = t0 + tx * 2 + j;
            if (r < rows && t < T) out[(size_t)t * rows + r] = acc[i][j];
        }
}

// sip_matmul: out (T, rows) = x (T, cols) · Wᵀ, tiled 64 rows × 32 tokens.
// grid (⌈rows/64⌉, ⌈T/32⌉), block 256.
extern "C" __global__ void sip_matmul(float* out, const uint8_t* W, const float* x, int rows, int cols, int rowBytes, int T, int dt, int tc) {
    __shared__ Tiles sm;
#define M(DT) matmul_tiled<DT>(sm, out, W, x, rows, cols, rowBytes, T, tc)
    SIP_DISPATCH(dt, M)
#undef M
}

// ---- FFN over a record table ----------------------------------------------

// sip_ffn_gateup: h[t, j] = silu(g_j·x_t)·(u_j·x_t) for the n records of the
// table, one warp per (record, token). grid (⌈n/8⌉, T), block 256.
extern "C" __global__ void sip_ffn_gateup(float* h, const unsigned long long* recs, const float* x, int n, int H, int rowBytes, int dt, int vec) {
    int lane = threadIdx.x & 31;
    int j = blockIdx.x * SIP_WARPS + (threadIdx.x >> 5), t = blockIdx.y;
    if (j >= n) return;
    const uint8_t* rec = (const uint8_t*)recs[j];
    const float* xt = x + (size_t)t * H;
    float g = 0.f, u = 0.f;
#define D(DT) g = dot_lane<DT>(rec, xt, H, lane, vec); u = dot_lane<DT>(rec + rowBytes, xt, H, lane, vec)
    SIP_DISPATCH(dt, D)
#undef D
    g = warp_sum(g);
    u = warp_sum(u);
    if (lane == 0) h[(size_t)t * n + j] = silu(g) * u;
}

// sip_ffn_gateup_norm: sip_ffn_gateup for one token whose x is first
// RMS-normalised by norm_stage (normOut gets the normalised row).
// grid ⌈n/8⌉, block 256.
extern "C" __global__ void sip_ffn_gateup_norm(float* h, const unsigned long long* recs, const float* x, int n, int H, int rowBytes, int dt, int vec,
                                               const float* normW, float* normOut, float eps) {
    __shared__ __align__(16) float xs[SIP_NORM_MAX];
    norm_stage(xs, x, normW, H, eps, normOut);
    int lane = threadIdx.x & 31;
    int j = blockIdx.x * SIP_WARPS + (threadIdx.x >> 5);
    if (j >= n) return;
    const uint8_t* rec = (const uint8_t*)recs[j];
    float g = 0.f, u = 0.f;
#define D(DT) g = dot_lane<DT>(rec, xs, H, lane, vec); u = dot_lane<DT>(rec + rowBytes, xs, H, lane, vec)
    SIP_DISPATCH(dt, D)
#undef D
    g = warp_sum(g);
    u = warp_sum(u);
    if (lane == 0) h[j] = silu(g) * u;
}

template <int DT>
__device__ void ffn_gateup_tiled(Tiles& sm, float* h, const unsigned long long* recs, const float* x, int n, int H, int rowBytes, int T, int tc) {
    int j0 = blockIdx.x * SIP_TILE_M, t0 = blockIdx.y * SIP_TILE_N;
    float g[4][2] = {}, u[4][2] = {};
    auto loadX = [&](int nn, int k) { return t0 + nn < T ? x[(size_t)(t0 + nn) * H + k] : 0.f; };
    gemm_tile<DT, false>(sm, g, H, tc, [&](int m, int k) { return j0 + m < n ? elem<DT>((const uint8_t*)recs[j0 + m], k) : 0.f; }, loadX);
    gemm_tile<DT, false>(sm, u, H, tc, [&](int m, int k) { return j0 + m < n ? elem<DT>((const uint8_t*)recs[j0 + m] + rowBytes, k) : 0.f; }, loadX);
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int jj = 0; jj < 2; jj++) {
            int j = j0 + ty * 4 + i, t = t0 + tx * 2 + jj;
            if (j < n && t < T) h[(size_t)t * n + j] = silu(g[i][jj]) * u[i][jj];
        }
}

// sip_ffn_gateup_tiled: h as sip_ffn_gateup for a prefill batch, as a GEMM
// tiled 64 records × 32 tokens. grid (⌈n/64⌉, ⌈T/32⌉), block 256.
extern "C" __global__ void sip_ffn_gateup_tiled(float* h, const unsigned long long* recs, const float* x, int n, int H, int rowBytes, int T, int dt, int tc) {
    __shared__ Tiles sm;
#define M(DT) ffn_gateup_tiled<DT>(sm, h, recs, x, n, H, rowBytes, T, tc)
    SIP_DISPATCH(dt, M)
#undef M
}

// down_cols accumulates acc[c] += a·d[c0 + c] for the cpt columns of one
// thread (8 for 16-bit, 4 for f32, 32 for a quant block), bounds-checked.
template <int DT>
__device__ __forceinline__ void down_cols(float* acc, float a, const uint8_t* d, int c0, int H, int vec) {
    if (DT == SIP_Q8_0 || DT == SIP_Q4_0) {
        if (c0 >= H) return;
        const uint8_t* blk = d + (c0 / SIP_QK) * (DT == SIP_Q8_0 ? 34 : 18);
        float s = a * f16f(ld16(blk));
        if (DT == SIP_Q8_0) {
#pragma unroll
            for (int i = 0; i < SIP_QK; i += 2) {
                uint16_t two = ld16(blk + 2 + i);
                acc[i] += s * (float)(int8_t)(two & 0xff);
                acc[i + 1] += s * (float)(int8_t)(two >> 8);
            }
        } else {
#pragma unroll
            for (int j = 0; j < 16; j += 2) {
                uint16_t two = ld16(blk + 2 + j);
                int b0 = two & 0xff, b1 = two >> 8;
                acc[j] += s * (float)((b0 & 15) - 8);
                acc[j + 16] += s * (float)((b0 >> 4) - 8);
                acc[j + 1] += s * (float)((b1 & 15) - 8);
                acc[j + 17] += s * (float)((b1 >> 4) - 8);
            }
        }
        return;
    }
    if (vec && DT == SIP_F32) {
        if (c0 >= H) return;
        float4 w = *(const float4*)(d + 4 * (size_t)c0);
        acc[0] += a * w.x; acc[1] += a * w.y; acc[2] += a * w.z; acc[3] += a * w.w;
        return;
    }
    if (vec && DT != SIP_F32) {
        if (c0 >= H) return;
        float w[8];
        widen8<DT>(*(const uint4*)(d + 2 * (size_t)c0), w);
#pragma unroll
        for (int i = 0; i < 8; i++) acc[i] += a * w[i];
        return;
    }
    const int cpt = DT == SIP_F32 ? 4 : 8;
#pragma unroll
    for (int i = 0; i < cpt; i++)
        if (c0 + i < H) acc[i] += a * elem<DT>(d, c0 + i);
}

template <int DT>
__device__ void ffn_down_partial(float* partial, const unsigned long long* recs, const float* h, int n, int H, int rowBytes, int chunk, int vec) {
    const int cpt = (DT == SIP_Q8_0 || DT == SIP_Q4_0) ? SIP_QK : (DT == SIP_F32 ? 4 : 8);
    float acc[cpt];
#pragma unroll
    for (int i = 0; i < cpt; i++) acc[i] = 0.f;
    int c0 = (blockIdx.x * SIP_DOWN_THREADS + threadIdx.x) * cpt;
    int s = blockIdx.y, j0 = s * chunk, j1 = min(n, j0 + chunk);
    for (int j = j0; j < j1; j++) {
        down_cols<DT>(acc, h[j], (const uint8_t*)recs[j] + 2 * rowBytes, c0, H, vec);
    }
    float* p = partial + (size_t)s * H;
#pragma unroll
    for (int i = 0; i < cpt; i++)
        if (c0 + i < H) p[c0 + i] = acc[i];
}

// sip_ffn_down_partial: the decode down projection split over records:
// partial[s, i] = Σ_{j in split s} h[j]·d_j[i], each thread owning cpt
// consecutive columns (coalesced along the hidden dimension), no atomics.
// grid (⌈H/(128·cpt)⌉, splits), block 128.
extern "C" __global__ void sip_ffn_down_partial(float* partial, const unsigned long long* recs, const float* h, int n, int H, int rowBytes, int chunk, int dt, int vec) {
#define M(DT) ffn_down_partial<DT>(partial, recs, h, n, H, rowBytes, chunk, vec)
    SIP_DISPATCH(dt, M)
#undef M
}

// sip_reduce_splits: out[i] = Σ_s partial[s, i], and addTo[i] += out[i]
// when addTo is set (the residual add after the FFN). grid ⌈H/256⌉, block 256.
extern "C" __global__ void sip_reduce_splits(float* out, const float* partial, int H, int splits, float* addTo) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= H) return;
    float s = 0.f;
    for (int k = 0; k < splits; k++) s += partial[(size_t)k * H + i];
    out[i] = s;
    if (addTo) addTo[i] += s;
}

// sip_argmax: out[0] the index of the largest of x[0, n), out[1] its bits,
// out[2] 1 when some x is NaN or infinite. Ties go to the lower index and NaN
// is never chosen unless x[0] is NaN (then 0): runner.Argmax's scan, so greedy
// decoding reads back 12 bytes, not the logits. Unless null, next[0] gets the
// index and pos[0] grows by one: the next decode step's token id and position
// are then on the device without an upload (a wait). grid 1, block SIP_EW_THREADS.
__device__ __forceinline__ bool argmax_better(float v, int i, float bv, int bi) {
    return v > bv || (v == bv && i < bi);
}

extern "C" __global__ void sip_argmax(int* out, const float* x, int n, int* next, int* pos) {
    __shared__ float sv[SIP_EW_THREADS];
    __shared__ int si[SIP_EW_THREADS];
    __shared__ int sbad[SIP_EW_THREADS];
    int tid = threadIdx.x;
    // -inf with no index yet: a -inf logit still wins it (v == bv, i < bi).
    float bv = -INFINITY;
    int bi = 0x7fffffff, bad = 0;
    for (int i = tid; i < n; i += SIP_EW_THREADS) {
        float v = x[i];
        bad |= (__float_as_uint(v) & 0x7f800000u) == 0x7f800000u;
        if (argmax_better(v, i, bv, bi)) bv = v, bi = i; // false for NaN
    }
    sv[tid] = bv, si[tid] = bi, sbad[tid] = bad;
    __syncthreads();
    for (int s = SIP_EW_THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) {
            if (argmax_better(sv[tid + s], si[tid + s], sv[tid], si[tid])) sv[tid] = sv[tid + s], si[tid] = si[tid + s];
            sbad[tid] |= sbad[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        int i = si[0];
        if (n <= 0 || (__float_as_uint(x[0]) & 0x7fffffffu) > 0x7f800000u || i == 0x7fffffff) i = 0;
        out[0] = i;
        out[1] = n > 0 ? (int)__float_as_uint(x[i]) : 0;
        out[2] = sbad[0];
        if (next) next[0] = i;
        if (pos) pos[0] += 1;
    }
}

template <int DT>
__device__ void ffn_down_tiled(Tiles& sm, float* y, const unsigned long long* recs, const float* h, int n, int H, int rowBytes, int T, int tc) {
    int i0 = blockIdx.x * SIP_TILE_M, t0 = blockIdx.y * SIP_TILE_N;
    float acc[4][2] = {};
    gemm_tile<DT, true>(
        sm, acc, n, tc,
        [&](int m, int k) { return i0 + m < H ? elem<DT>((const uint8_t*)recs[k] + 2 * rowBytes, i0 + m) : 0.f; },
        [&](int nn, int k) { return t0 + nn < T ? h[(size_t)(t0 + nn) * n + k] : 0.f; });
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            int c = i0 + ty * 4 + i, t = t0 + tx * 2 + j;
            if (c < H && t < T) y[(size_t)t * H + c] = acc[i][j];
        }
}

// sip_ffn_down_tiled: y (T, H) = h (T, n) · D, D's rows the records' down
// columns; tiled 64 columns × 32 tokens, the reduction over records inside
// the block. grid (⌈H/64⌉, ⌈T/32⌉), block 256.
extern "C" __global__ void sip_ffn_down_tiled(float* y, const unsigned long long* recs, const float* h, int n, int H, int rowBytes, int T, int dt, int tc) {
    __shared__ Tiles sm;
#define M(DT) ffn_down_tiled<DT>(sm, y, recs, h, n, H, rowBytes, T, tc)
    SIP_DISPATCH(dt, M)
#undef M
}

// ---- attention --------------------------------------------------------------

// A KV cache holds float32 or, when f16 is set, IEEE halves rounded to
// nearest even as they are written (kernels.F32ToF16's rounding).

// f2h rounds to the nearest half, ties to even; overflow is infinity.
__device__ __forceinline__ uint16_t f2h(float f) {
    uint32_t x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u | ((ax >> 13) & 0x3ffu);  // NaN, quiet
    if (ax >= 0x477ff000u) return sign | 0x7c00u;                          // ≥ 65520: infinity
    if (ax >= 0x38800000u) {                                               // normal
        uint32_t r = ax - 0x38000000u;
        return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
    }
    if (ax < 0x33000000u) return sign; // below 2⁻²⁵: zero
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)e; // the half's unit is 2⁻²⁴
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return sign | q;
}

__device__ __forceinline__ float kv_load(const void* c, size_t i, int f16) {
    return f16 ? f16f(((const uint16_t*)c)[i]) : ((const float*)c)[i];
}

__device__ __forceinline__ void kv_store(void* c, size_t i, float v, int f16) {
    if (f16)
        ((uint16_t*)c)[i] = f2h(v);
    else
        ((float*)c)[i] = v;
}

// sip_kv_append: keys and values of T tokens (T, kvDim) into one layer's
// cache at positions *posp.. . grid ⌈T·kvDim/256⌉, block 256.
extern "C" __global__ void sip_kv_append(void* kc, void* vc, const float* k, const float* v, int kvDim, int T, const int* posp, int f16) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= T * kvDim) return;
    size_t at = (size_t)(*posp) * kvDim + i;
    kv_store(kc, at, k[i], f16);
    kv_store(vc, at, v[i], f16);
}

// attend_part runs one query head's online softmax over cache positions
// [lo, hi): qs the query (shared), keys and values at kc/vc + s·kvDim +
// kvh; position last's key and value are read from klast/vlast instead
// when set. Chunks of 32 keys (scores in shared memory, one warp per key's
// dot), so any context length fits. m is the running maximum score, l the
// sum of exp(score − m), acc[k] the weighted values of dimension
// threadIdx.x + k·SIP_ATT_THREADS.
__device__ void attend_part(const float* qs, const void* kc, const void* vc, int f16, int lo, int hi, int last, int kvDim, int kvh, int headDim,
                            float scale, const float* klast, const float* vlast, float& m, float& l, float* acc) {
    __shared__ float sc[SIP_ATT_CHUNK];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int per = SIP_MAX_HEAD_DIM / SIP_ATT_THREADS; // output dims per thread
#pragma unroll
    for (int i = 0; i < per; i++) acc[i] = 0.f;
    m = -INFINITY, l = 0.f;
    const int warps = SIP_ATT_THREADS / 32;
    for (int s0 = lo; s0 < hi; s0 += SIP_ATT_CHUNK) {
        int cnt = min(SIP_ATT_CHUNK, hi - s0);
        for (int i = warp; i < cnt; i += warps) {
            size_t row = (size_t)(s0 + i) * kvDim + kvh;
            float d = 0.f;
            if (klast && s0 + i == last)
                for (int c = lane; c < headDim; c += 32) d += qs[c] * klast[c];
            else
                for (int c = lane; c < headDim; c += 32) d += qs[c] * kv_load(kc, row + c, f16);
            d = warp_sum(d);
            if (lane == 0) sc[i] = d * scale;
        }
        __syncthreads();
        float cm = m;
        for (int i = 0; i < cnt; i++) cm = fmaxf(cm, sc[i]);
        float corr = expf(m - cm); // 0 on the first chunk (m = −∞)
        l *= corr;
#pragma unroll
        for (int k = 0; k < per; k++) acc[k] *= corr;
        for (int i = 0; i < cnt; i++) {
            float p = expf(sc[i] - cm);
            l += p;
            size_t row = (size_t)(s0 + i) * kvDim + kvh;
            bool isLast = vlast && s0 + i == last;
#pragma unroll
            for (int k = 0; k < per; k++) {
                int d = tid + k * SIP_ATT_THREADS;
                if (d < headDim) acc[k] += p * (isLast ? vlast[d] : kv_load(vc, row + d, f16));
            }
        }
        m = cm;
        __syncthreads();
    }
}

// attend is one query head's attention over positions [0, n): o gets it.
__device__ void attend(float* o, const float* qs, const void* kc, const void* vc, int f16, int n, int kvDim, int kvh, int headDim, float scale,
                       const float* klast, const float* vlast) {
    const int per = SIP_MAX_HEAD_DIM / SIP_ATT_THREADS;
    float acc[per], m, l;
    attend_part(qs, kc, vc, f16, 0, n, n - 1, kvDim, kvh, headDim, scale, klast, vlast, m, l, acc);
    float inv = 1.f / l;
#pragma unroll
    for (int k = 0; k < per; k++) {
        int d = threadIdx.x + k * SIP_ATT_THREADS;
        if (d < headDim) o[d] = acc[k] * inv;
    }
}

// attend_split is attend over the part of [0, n) that split s of S takes
// (flash-decoding: a long context's keys spread over S blocks a head).
// Each block leaves its m, l and acc in part; the head's last block to
// finish (a counter a head, which it resets for the next launch) merges
// the S parts into o.
__device__ void attend_split(float* o, const float* qs, const void* kc, const void* vc, int f16, int n, int kvDim, int kvh, int headDim, float scale,
                             const float* klast, const float* vlast, float* part, int* count, int h, int s, int S) {
    if (S == 1) {
        attend(o, qs, kc, vc, f16, n, kvDim, kvh, headDim, scale, klast, vlast);
        return;
    }
    const int per = SIP_MAX_HEAD_DIM / SIP_ATT_THREADS, stride = SIP_MAX_HEAD_DIM + 2;
    int L = (n + S - 1) / S;
    L = (L + SIP_ATT_CHUNK - 1) / SIP_ATT_CHUNK * SIP_ATT_CHUNK;
    int lo = min(n, s * L), hi = min(n, lo + L);
    float acc[per], m, l;
    attend_part(qs, kc, vc, f16, lo, hi, n - 1, kvDim, kvh, headDim, scale, klast, vlast, m, l, acc);
    float* p = part + ((size_t)h * S + s) * stride;
    if (threadIdx.x == 0) {
        p[0] = m;
        p[1] = l;
    }
#pragma unroll
    for (int k = 0; k < per; k++) {
        int d = threadIdx.x + k * SIP_ATT_THREADS;
        if (d < headDim) p[2 + d] = acc[k];
    }
    __threadfence();
    __shared__ int lastBlock;
    __syncthreads();
    if (threadIdx.x == 0) lastBlock = atomicAdd(&count[h], 1) == S - 1;
    __syncthreads();
    if (!lastBlock) return;
    __threadfence();
    // The last split holds position n − 1, so M is finite; an empty split
    // (m = −∞) weighs 0.
    // Each part's weight exp(m_j − M) once, in shared memory (S ≤ 32).
    const volatile float* ps = part + (size_t)h * S * stride;
    __shared__ float wts[32];
    float M = -INFINITY, Lsum = 0.f;
    for (int j = 0; j < S; j++) M = fmaxf(M, ps[j * stride]);
    if (threadIdx.x < S) wts[threadIdx.x] = expf(ps[threadIdx.x * stride] - M);
    __syncthreads();
    for (int j = 0; j < S; j++) Lsum += ps[j * stride + 1] * wts[j];
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        float v = 0.f;
        for (int j = 0; j < S; j++) v += ps[j * stride + 2 + d] * wts[j];
        o[d] = v / Lsum;
    }
    if (threadIdx.x == 0) count[h] = 0;
}

// sip_attention: causal softmax attention of query head h of token t (at
// position pos+t) over cache positions [0, pos+t], keys and values of kv
// head h/group. The position is read from device memory (*posp).
// grid (heads, T), block 128.
extern "C" __global__ void sip_attention(float* out, const float* q, const void* kc, const void* vc, const int* posp, int heads, int headDim, int kvDim, int group, float scale, int f16) {
    __shared__ float qs[SIP_MAX_HEAD_DIM];
    int h = blockIdx.x, t = blockIdx.y, pos = *posp;
    const float* qv = q + (size_t)t * heads * headDim + (size_t)h * headDim;
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) qs[d] = qv[d];
    __syncthreads();
    attend(out + (size_t)t * heads * headDim + (size_t)h * headDim, qs, kc, vc, f16, pos + t + 1, kvDim, (h / group) * headDim, headDim, scale, 0, 0);
}

// rope_stage rotates a head held in shared memory as sip_rope does (HF
// rotate_half, angle float32(pos)·invFreq[i], cos and sin in double).
__device__ void rope_stage(float* v, const float* invFreq, int headDim, int pos) {
    int half = headDim / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float a = (float)pos * invFreq[i];
        float c = (float)cos((double)a), s = (float)sin((double)a);
        float p = v[i], q = v[i + half];
        v[i] = p * c - q * s;
        v[i + half] = q * c + p * s;
    }
    __syncthreads();
}

// sip_attention_rope: one decode token's RoPE on q and k, KV append and
// attention in one launch. Block h rotates its query head and its kv
// head's key in shared memory and attends with the new key and value from
// there (the cache slot at pos is written by another block meanwhile and
// never read here); the first block of each kv group writes the rotated
// key and the value to the cache at pos: the cache and out as sip_rope ×2,
// sip_kv_append and sip_attention leave them. q and k are left unrotated
// (other blocks still read k). With S > 1 splits a head's keys spread over
// S blocks (attend_split: part holds heads·S·(SIP_MAX_HEAD_DIM + 2)
// floats, count heads ints, zero between launches). grid (heads, S), block 128.
extern "C" __global__ void sip_attention_rope(float* out, const float* q, const float* k, const float* v, void* kc, void* vc, const int* posp, const float* invFreq,
                                              int heads, int headDim, int kvDim, int group, float scale, int f16, float* part, int* count) {
    __shared__ float qs[SIP_MAX_HEAD_DIM];
    __shared__ float ks[SIP_MAX_HEAD_DIM];
    __shared__ float vs[SIP_MAX_HEAD_DIM];
    int h = blockIdx.x, pos = *posp, kvh = (h / group) * headDim;
    const float* qv = q + (size_t)h * headDim;
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        qs[d] = qv[d];
        ks[d] = k[kvh + d];
        vs[d] = v[kvh + d];
    }
    __syncthreads();
    rope_stage(qs, invFreq, headDim, pos);
    rope_stage(ks, invFreq, headDim, pos);
    bool lead = h % group == 0 && blockIdx.y == 0;
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        if (lead) {
            kv_store(kc, (size_t)pos * kvDim + kvh + d, ks[d], f16);
            kv_store(vc, (size_t)pos * kvDim + kvh + d, vs[d], f16);
        }
        if (f16) { // the new key and value as the cache holds them
            ks[d] = f16f(f2h(ks[d]));
            vs[d] = f16f(f2h(vs[d]));
        }
    }
    __syncthreads();
    attend_split(out + (size_t)h * headDim, qs, kc, vc, f16, pos + 1, kvDim, kvh, headDim, scale, ks, vs, part, count, h, blockIdx.y, gridDim.y);
}

// ---- the router's decode set ----------------------------------------------

// score_key orders floats as unsigned ints (−0 as +0), as runner.scoreKey.
__device__ __forceinline__ unsigned score_key(float v) {
    unsigned b = __float_as_uint(v + 0.f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// block_scan returns how many threads of the block below this one have p,
// and the block's count in total. Every thread must call it.
__device__ int block_scan(bool p, int* warpCount, int& total) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned ball = __ballot_sync(0xffffffffu, p);
    if (lane == 0) warpCount[w] = __popc(ball);
    __syncthreads();
    int before = __popc(ball & ((1u << lane) - 1u));
    total = 0;
    for (int i = 0; i < (int)(blockDim.x >> 5); i++) {
        if (i < w) before += warpCount[i];
        total += warpCount[i];
    }
    __syncthreads();
    return before;
}

// radix_kth returns the k-th largest of the n keys key(j) (1 ≤ k ≤ n), and
// in ties how many keys equal to it are among the k largest: 8 bits a pass
// from the top, the byte's histogram over the keys matching so far names
// the bucket that holds it. One block, every thread calling it.
template <typename K>
__device__ unsigned radix_kth(int n, int k, K key, int& ties) {
    __shared__ unsigned hist[256];
    __shared__ unsigned prefix, mask;
    __shared__ int need;
    int tid = threadIdx.x;
    if (tid == 0) { prefix = 0; mask = 0; need = k; }
    __syncthreads();
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = tid; b < 256; b += blockDim.x) hist[b] = 0;
        __syncthreads();
        for (int j = tid; j < n; j += blockDim.x) {
            unsigned kj = key(j);
            if ((kj & mask) == prefix) atomicAdd(&hist[(kj >> shift) & 255], 1u);
        }
        __syncthreads();
        if (tid == 0) {
            int above = 0, b = 255;
            for (; b > 0 && above + (int)hist[b] < need; b--) above += hist[b];
            prefix |= (unsigned)b << shift;
            mask |= 255u << shift;
            need -= above;
        }
        __syncthreads();
    }
    ties = need;
    return prefix;
}

// topk_select chooses, of the n keys score_key(x[j]), the k largest (ties:
// the lower j first, as runner's topKeys and the sampler's order) and calls
// place(j, slot) for each in index order, slot its rank among the chosen.
// The k-th largest key by radix_kth; then a block scan in index order
// places the keys above it and the first ties.
// One block of at most 1024 threads, every thread calling it; 1 ≤ k ≤ n.
template <typename F>
__device__ void topk_select(const float* x, int n, int k, F place) {
    __shared__ int carryEq, carrySel;
    __shared__ int warpCount[32];
    int tid = threadIdx.x, ties; // ties: keys equal to thr that are chosen, lowest index first
    unsigned thr = radix_kth(n, k, [&](int j) { return score_key(x[j]); }, ties);
    if (tid == 0) { carryEq = 0; carrySel = 0; }
    __syncthreads();
    for (int c0 = 0; c0 < n; c0 += blockDim.x) {
        int j = c0 + tid, ce = carryEq, cs = carrySel, eqTot, selTot;
        unsigned key = j < n ? score_key(x[j]) : 0u;
        bool eq = j < n && key == thr;
        int eqBefore = ce + block_scan(eq, warpCount, eqTot);
        bool sel = j < n && (key > thr || (eq && eqBefore < ties));
        int slot = cs + block_scan(sel, warpCount, selTot);
        if (sel) place(j, slot);
        if (tid == 0) { carryEq = ce + eqTot; carrySel = cs + selTot; }
        __syncthreads();
    }
}

// sip_route: the router's decode set of one token, chosen and gathered on
// the device. Of the n candidate groups first.., the k of largest scores
// (topk_select) are chosen; table gets all's first nstatic record
// addresses, then G entries per chosen group in ascending group order: the
// group's records [max(nstatic, gG), min(nall, (g+1)G)), the rest of the G
// the address of a zero record (which adds nothing). grid 1, block 256.
extern "C" __global__ void sip_route(unsigned long long* table, const unsigned long long* all, const float* scores, int first, int n, int k,
                                     int nstatic, int G, int nall, const unsigned long long* zero) {
    for (int i = threadIdx.x; i < nstatic; i += blockDim.x) table[i] = all[i];
    if (k <= 0) return;
    topk_select(scores + first, n, k, [&](int j, int slot) {
        int g = first + j, lo = max(nstatic, g * G), hi = min(nall, (g + 1) * G);
        unsigned long long* out = table + nstatic + (size_t)slot * G;
        for (int i = 0; i < G; i++) out[i] = lo + i < hi ? all[lo + i] : (unsigned long long)zero;
    });
}

// sip_topk: a sampled decode step's candidates. Of x[0, n) the k largest
// (topk_select) are written in index order: out[1+i] the index, out[1+k+i]
// the value's bits; out[0] is 1 when some x is NaN or infinite. The host
// orders the k and draws, so it reads back 8k + 4 bytes, not the logits.
// Unless null, pos[0] grows by one (the next decode step's position).
// grid 1, block 1024.
extern "C" __global__ void sip_topk(int* out, const float* x, int n, int k, int* pos) { // k ≤ SIP_TOPK_MAX
    __shared__ int bad;
    if (threadIdx.x == 0) bad = 0;
    __syncthreads();
    int mybad = 0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) mybad |= (__float_as_uint(x[j]) & 0x7f800000u) == 0x7f800000u;
    if (mybad) bad = 1;
    topk_select(x, n, k, [&](int j, int slot) {
        out[1 + slot] = j;
        out[1 + k + slot] = (int)__float_as_uint(x[j]);
    });
    if (threadIdx.x == 0) {
        out[0] = bad;
        if (pos) pos[0] += 1;
    }
}

// ---- voting ------------------------------------------------------------------

// sip_vote: SelectInfer's vote of one prefill layer. For every token t, the
// k records of largest |h[t, j]| (ties: lower j first, as the CPU's votes)
// get one vote each: counts[j] += 1. The k-th largest |h| is found by a
// radix select over the bits of |h| (for non-negative floats the bit
// patterns order as the values), 8 bits per pass; then every key above it
// votes, and the first k − (number above) keys equal to it, in rank order,
// found by warp 0 with ballots. Counts are integers: the atomics make the
// result exact whatever the order. grid T, block 256.
extern "C" __global__ void sip_vote(int* counts, const float* h, int n, int k) {
    const float* row = h + (size_t)blockIdx.x * n;
    int tid = threadIdx.x, need;
    unsigned thr = radix_kth(n, k, [&](int j) { return __float_as_uint(row[j]) & 0x7fffffffu; }, need);
    for (int j = tid; j < n; j += blockDim.x) {
        unsigned key = __float_as_uint(row[j]) & 0x7fffffffu;
        if (key > thr) atomicAdd(&counts[j], 1);
    }
    if (tid < 32) {
        int left = need; // keys equal to thr that vote, lowest ranks first
        for (int j0 = 0; j0 < n && left > 0; j0 += 32) {
            int j = j0 + tid;
            bool eq = j < n && (__float_as_uint(row[j]) & 0x7fffffffu) == thr;
            unsigned ball = __ballot_sync(0xffffffffu, eq);
            int before = __popc(ball & ((1u << tid) - 1u));
            if (eq && before < left) atomicAdd(&counts[j], 1);
            left -= __popc(ball);
        }
    }
}
