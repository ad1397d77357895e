package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// BandwidthProbe measures the machine's read bandwidth: a streaming read of
// a buffer larger than the caches, split over a pool's workers. It keeps
// its buffer so that a benchmark can measure beside every figure: on a
// shared VM the bandwidth moved between 38 and 76 GB/s within minutes, so a
// bound measured once at the start made the fractions of it meaningless.
type BandwidthProbe struct {
	buf  []byte
	pool *kernels.Pool
	sink atomic.Uint64
}

// NewBandwidthProbe allocates and touches a buffer of size bytes.
func NewBandwidthProbe(size int, pool *kernels.Pool) *BandwidthProbe {
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12)
	}
	return &BandwidthProbe{buf: buf, pool: pool}
}

// Measure reads the buffer once to warm up, then reps times, and returns
// bytes per second of the best repetition.
func (b *BandwidthProbe) Measure(reps int) float64 {
	threads := b.pool.Workers()
	chunk := (len(b.buf) / (16 * threads)) &^ 4095
	n := 16 * threads // 16 chunks per worker: a slowed worker takes fewer
	run := func() time.Duration {
		start := time.Now()
		b.pool.Run(n, func(lo, hi, _ int) {
			var s uint64
			for w := lo; w < hi; w++ {
				s += kernels.SumBytes(b.buf[w*chunk : (w+1)*chunk])
			}
			b.sink.Add(s)
		})
		return time.Since(start)
	}
	run()
	best := time.Duration(1 << 62)
	for r := 0; r < max(1, reps); r++ {
		best = min(best, run())
	}
	return float64(chunk*n) / best.Seconds()
}

// MeasureFMAPeak returns the FLOP/s of the register-only FMA loop on
// threads threads: the best of five runs (a run that a neighbour's burst
// slowed once gave half the peak, and prefill "above the peak").
func MeasureFMAPeak(threads int) float64 {
	const iters = 5_000_000
	pool := kernels.NewPool(threads)
	defer pool.Close()
	kernels.FMAPeak(1000)
	best := 0.0
	for rep := 0; rep < 5; rep++ {
		start := time.Now()
		pool.Run(threads, func(lo, hi, _ int) {
			for i := lo; i < hi; i++ {
				kernels.FMAPeak(iters)
			}
		})
		best = max(best, kernels.FMAPeakFlops(iters)*float64(threads)/time.Since(start).Seconds())
	}
	return best
}

// DecodeResult is one timed decode run.
type DecodeResult struct {
	TokS          float64 // 1 / the median decode step
	BytesPerToken uint64
	ActiveRecords int
	PrefillTokS   float64
	TTFT          time.Duration
}

// Decode prefills a random prompt of promptLen tokens (which votes,
// with a selection), then times tokens greedy decode steps after one
// untimed warm-up step (first touch of the mapped pages).
func Decode(m *runner.Model, pool *kernels.Pool, sel *runner.Selection, promptLen, tokens int, seed uint64) (*DecodeResult, error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	prompt := make([]int, promptLen)
	for i := range prompt {
		prompt[i] = rng.IntN(m.Config.VocabSize)
	}
	ss, err := m.NewSession(pool, promptLen+tokens+2, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		return nil, err
	}
	ss.Sel = sel
	// A collection now, not during the timed steps (the bandwidth probe
	// leaves a gigabyte of garbage behind).
	runtime.GC()
	start := time.Now()
	logits, err := ss.Start(prompt)
	if err != nil {
		return nil, err
	}
	tok := runner.Argmax(logits)
	ttft := time.Since(start)
	res := &DecodeResult{TTFT: ttft, PrefillTokS: float64(promptLen) / ttft.Seconds(), ActiveRecords: ss.Plan.Active(m)}
	// Warm-up step.
	if logits, err = ss.Next(tok); err != nil {
		return nil, err
	}
	// Each step is timed on its own and the figure is 1 / the median step:
	// on a shared machine a neighbour's burst stalls a few steps, and the
	// median ignores them where the mean would not.
	steps := make([]time.Duration, tokens)
	for i := 0; i < tokens; i++ {
		tok = runner.Argmax(logits)
		t0 := time.Now()
		if logits, err = ss.Next(tok); err != nil {
			return nil, err
		}
		steps[i] = time.Since(t0)
	}
	slices.Sort(steps)
	if tokens > 0 {
		med := steps[tokens/2]
		if tokens%2 == 0 {
			med = (steps[tokens/2-1] + steps[tokens/2]) / 2
		}
		res.TokS = 1 / med.Seconds()
	}
	res.BytesPerToken = m.DecodeBytes(res.ActiveRecords, ss.Pos) + ss.Plan.RouterBytes(m)
	return res, nil
}

// OpBreakdown is the time of each operation of a decode step, averaged
// over the steps measured, and the step itself.
type OpBreakdown struct {
	Step time.Duration            // mean wall time of a step
	Ops  map[string]time.Duration // mean time per step in each operation
	// Kernels is, on a device that times its kernels, each kernel's
	// launches, time and bytes per step (Ops is then empty: the host's
	// clock sees launches queued, not run).
	Kernels map[string]backend.KernelTime
}

// DecodeOps runs tokens decode steps (after a promptLen-token prompt and a
// warm-up step) with every operation timed (backend.Timed): where a step's
// time goes. The operations' sum is less than the step by what is outside
// them (sampling, the plan lookup, the Go runtime).
func DecodeOps(m *runner.Model, pool *kernels.Pool, sel *runner.Selection, promptLen, tokens int) (*OpBreakdown, error) {
	kt, gpu := m.Dev.(backend.KernelTimer)
	if gpu {
		kt.TimeKernels(true) // before the session, whose Exec then launches one by one
		defer kt.TimeKernels(false)
	}
	ss, err := m.NewSession(pool, promptLen+tokens+2, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		return nil, err
	}
	ss.Sel = sel
	prompt := make([]int, promptLen)
	for i := range prompt {
		prompt[i] = (7919 * (i + 1)) % m.Config.VocabSize
	}
	logits, err := ss.Start(prompt)
	if err != nil {
		return nil, err
	}
	if logits, err = ss.Next(runner.Argmax(logits)); err != nil {
		return nil, err
	}
	var timed *backend.Timed
	if gpu {
		if _, err := kt.KernelTimes(); err != nil { // the prompt's and the warm-up's
			return nil, err
		}
	} else {
		ss.S.WrapExec(func(e backend.Exec) backend.Exec {
			timed = backend.NewTimed(e, m.Config.VocabSize)
			return timed
		})
	}
	// Each step picks its token as sirun does by default (temperature,
	// top-k, top-p), timed as an operation of its own, so the table shows
	// what sampling adds to a greedy step.
	sampler := runner.NewSampler(runner.DefaultSampler())
	work := make([]float32, len(logits))
	var sampling time.Duration
	runtime.GC()
	start := time.Now()
	for i := 0; i < tokens; i++ {
		copy(work, logits)
		t0 := time.Now()
		tok := sampler.Sample(work, prompt)
		sampling += time.Since(t0)
		if logits, err = ss.Next(tok); err != nil {
			return nil, err
		}
	}
	b := &OpBreakdown{Step: time.Since(start) / time.Duration(tokens), Ops: map[string]time.Duration{}}
	if gpu {
		times, err := kt.KernelTimes()
		if err != nil {
			return nil, err
		}
		b.Kernels = map[string]backend.KernelTime{}
		for k, t := range times {
			n := int64(tokens)
			b.Kernels[k] = backend.KernelTime{Launches: int(int64(t.Launches) / n), Time: t.Time / time.Duration(n), Bytes: t.Bytes / n}
		}
		return b, nil
	}
	for op, d := range timed.Times {
		b.Ops[op] = d / time.Duration(tokens)
	}
	b.Ops[SampleOp] = sampling / time.Duration(tokens)
	return b, nil
}

// SampleOp is DecodeOps' name for picking a token with sirun's default
// sampler.
var SampleOp = fmt.Sprintf("sample (temperature %g, top-k %d, top-p %g, min-p %g)",
	runner.DefaultSampler().Temperature, runner.DefaultSampler().TopK, runner.DefaultSampler().TopP, runner.DefaultSampler().MinP)
