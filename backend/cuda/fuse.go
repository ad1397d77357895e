//go:build cuda || cudaemu

package cuda

import (
	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cudaplan"
)

// A decode token's operations are held back one at a time and launched
// fused with the next where the pair has a kernel of its own: RMSNorm
// with the matvecs or FFN gate-up that read it (the norm as their
// prologue), RoPE on q and k with the attention (which appends to the
// cache), o_proj and the FFN's reduction with the residual add that
// follows. A decode step is then 6 launches a layer instead of 15 (each
// launch a few microseconds of fixed cost on a GPU). Anything else first
// launches what is held back (settle), so results never depend on it.
type pending struct {
	norm bool // RMSNorm(normOut, normX, normW) of one row
	normOut,
	normX uint64
	normW   *vector
	normEps float32

	ropes   int // RoPE of one token on ropeX[:ropes], at ropePos
	ropeX   [2]uint64
	ropeN   [2]int
	ropeHD  int
	ropePos int

	mat    bool // one matvec matOut = matW · matX
	matOut uint64
	matX   uint64
	matW   *Matrix

	reduce  bool // the decode down projection's reduction into redOut
	redOut  uint64
	redPart uint64
	redH    int
	redS    int
}

// settle launches what is held back, in the order it was asked for (only
// one kind is held at a time).
func (e *Exec) settle() {
	p := &e.pend
	if p.norm {
		p.norm = false
		e.args.Reset(cudaplan.KRMSNorm).Ptr(p.normOut).Ptr(p.normX).Ptr(p.normW.p).Int(p.normW.n).F32(p.normEps)
		e.launch(cudaplan.RMSNorm(1))
	}
	for i := 0; i < p.ropes; i++ {
		e.args.Reset(cudaplan.KRoPE).Ptr(p.ropeX[i]).Ptr(e.invFreq.p).Int(p.ropeN[i]).Int(p.ropeHD).Ptr(e.posBuf.p)
		e.launch(cudaplan.RoPE(p.ropeN[i]/p.ropeHD, 1))
	}
	p.ropes = 0
	if p.mat {
		p.mat = false
		e.matVecFused(1, [3]uint64{p.matOut}, [3]*Matrix{p.matW}, p.matX, nil, 0, 0, 0)
	}
	if p.reduce {
		p.reduce = false
		e.args.Reset(cudaplan.KReduceSplits).Ptr(p.redOut).Ptr(p.redPart).Int(p.redH).Int(p.redS).Ptr(0)
		e.launch(cudaplan.Elementwise(cudaplan.KReduceSplits, p.redH))
	}
}

// normOf returns the held-back RMSNorm whose output is x (n values), and
// takes it: the caller launches it as its prologue.
func (e *Exec) normOf(x backend.Buf, n int) (w *vector, from uint64, eps float32, ok bool) {
	p := &e.pend
	if !p.norm || p.normOut != dp(x) || x.Len() != n || n != p.normW.n {
		return nil, 0, 0, false
	}
	p.norm = false
	return p.normW, p.normX, p.normEps, true
}

// fusable says ws can run as one sip_matvec_fused launch over x of one
// token: at most three matrices of one dtype, width and row size.
func fusable(ws []backend.Matrix, x backend.Buf) bool {
	if len(ws) == 0 || len(ws) > 3 {
		return false
	}
	w0 := ws[0].(*Matrix)
	if x.Len() != w0.cols {
		return false
	}
	for _, wi := range ws[1:] {
		w := wi.(*Matrix)
		if w.dt != w0.dt || w.cols != w0.cols || w.rowB != w0.rowB {
			return false
		}
	}
	return true
}

// matVecFused launches sip_matvec_fused: outs[i] = ws[i] · x for the first
// n matrices, x first normalised by normW (normOut getting it) when normW
// is set, addTo += outs[0] when addTo is set.
func (e *Exec) matVecFused(n int, outs [3]uint64, ws [3]*Matrix, x uint64, normW *vector, eps float32, normOut, addTo uint64) {
	var w [3]uint64
	var rows [3]int
	total, vec := 0, true
	for i := range n {
		w[i], rows[i] = ws[i].p, ws[i].rows
		total += rows[i]
		vec = vec && cudaplan.Vec(ws[i].dt, ws[i].cols, ws[i].p)
	}
	w0 := ws[0]
	var np uint64
	if normW != nil {
		np = normW.p // x is staged in aligned shared memory
	} else {
		vec = vec && cudaplan.Vec(w0.dt, w0.cols, x)
	}
	e.args.Reset(cudaplan.KMatVecFused).Ptr(outs[0]).Ptr(outs[1]).Ptr(outs[2]).Ptr(w[0]).Ptr(w[1]).Ptr(w[2]).
		Int(rows[0]).Int(rows[1]).Int(rows[2]).Ptr(x).Int(w0.cols).Int(w0.rowB).Int(int(w0.dt)).Int(b2i(vec)).
		Ptr(np).Ptr(normOut).F32(eps).Ptr(addTo)
	e.launch(reading(cudaplan.MatVecFused(total), total*w0.rowB))
}
