//go:build cuda || cudaemu

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/kernels"
)

// TestKVAppendF16: an f16 cache holds each key and value as
// kernels.F32ToF16 rounds it, bit for bit: ties to even, subnormals,
// underflow to ±0, overflow to ±Inf, NaN kept NaN.
func TestKVAppendF16(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(13, 13))
	const kvDim, T = 64, 40
	vals := make([]float32, T*kvDim)
	for i := range vals {
		switch i % 8 {
		case 0:
			vals[i] = float32(rng.NormFloat64())
		case 1: // around a half's rounding boundaries
			off := int32(rng.IntN(1<<13)) - 1<<12 // within half a half's step
			vals[i] = math.Float32frombits(uint32(int32(math.Float32bits(kernels.F16ToF32(uint16(rng.IntN(0x7c00))))) + off))
		case 2: // exact ties of normals and subnormals
			vals[i] = math.Float32frombits(math.Float32bits(kernels.F16ToF32(uint16(rng.IntN(0x7bff)))) | 1<<12)
		case 3:
			vals[i] = float32(math.Ldexp(rng.Float64(), -14-rng.IntN(12))) // subnormal range and below
		case 4:
			vals[i] = float32(65504 + rng.Float64()*64)
		case 5:
			vals[i] = -vals[i-1]
		case 6:
			vals[i] = float32(math.Ldexp(1, -25)) * float32(1+rng.IntN(3)/2)
		case 7:
			vals[i] = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN())}[rng.IntN(4)]
		}
	}
	gk, _ := p.bufs(t, vals)
	c := &backend.KVCache{Layers: 1, Ctx: T, KVDim: kvDim, Heads: 2, HeadDim: 32, Type: backend.KVF16}
	c.Keys, c.Values = p.ge.Alloc(c.Floats()), p.ge.Alloc(c.Floats())
	q, _ := p.bufs(t, make([]float32, T*64))
	out := p.ge.Alloc(T * 64)
	p.ge.Attention(out, q, gk, gk, c, 0, 0, T)
	got := make([]uint16, T*kvDim)
	p.ge.Read(nil, out)
	done := p.gd.enter()
	if err := p.gd.drv.dtoh(unsafe.Pointer(&got[0]), dp(c.Values), 2*len(got)); err != nil {
		t.Fatal(err)
	}
	done()
	if err := p.ge.Err(); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		want := kernels.F32ToF16(v)
		if math.IsNaN(float64(v)) {
			if got[i]&0x7c00 != 0x7c00 || got[i]&0x3ff == 0 {
				t.Errorf("%d: NaN stored as %#04x", i, got[i])
			}
			continue
		}
		if got[i] != want {
			t.Errorf("%d: %g (%#08x) stored as %#04x, want %#04x", i, v, math.Float32bits(v), got[i], want)
		}
	}
}
