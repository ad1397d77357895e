package profile

// A task's profile on a model directory or pack: the directory is converted
// to a temporary pack first; the task's prompts are sampled, tokenised and
// run; profiles are cached per model and settings.

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/runner"
)

// Opened is a model ready to run, with whatever must be cleaned up.
type Opened struct {
	Model *runner.Model
	pack  *format.Pack
	tmp   string
}

// Close releases the pack and removes a temporary conversion.
func (o *Opened) Close() {
	o.pack.Close()
	if o.tmp != "" {
		os.RemoveAll(o.tmp)
	}
}

// Open opens a pack, or converts a model directory to a temporary pack in
// its original order and opens that, fully loaded (γ = 1).
func Open(ctx context.Context, path string) (*Opened, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	o := &Opened{}
	packPath := path
	if st.IsDir() || convert.IsGGUF(path) { // a model to convert first; else a pack
		if o.tmp, err = os.MkdirTemp("", "sipack-profile-"); err != nil {
			return nil, err
		}
		packPath = filepath.Join(o.tmp, "model.sip")
		if _, err := convert.Convert(ctx, convert.Options{ModelDir: path, Output: packPath}); err != nil {
			os.RemoveAll(o.tmp)
			return nil, err
		}
	}
	if o.pack, err = format.Open(packPath, format.OpenOptions{Gamma: 1}); err != nil {
		if o.tmp != "" {
			os.RemoveAll(o.tmp)
		}
		return nil, err
	}
	if o.Model, err = runner.Load(o.pack, cpu.New()); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// TaskOptions selects the prompts of a task to profile.
type TaskOptions struct {
	Data       string // JSONL overriding the manifest's train data
	MaxPrompts int    // 0: all
	GenTokens  int    // -1: the manifest's
	// Continue is what follows each prompt: "greedy" or "" (GenTokens
	// greedy tokens, the method's), "stop" (greedy up to the first token
	// holding one of the manifest's stop strings, as the task's generation
	// ends), or "reference" (the row's reference, teacher-forced).
	Continue string
	Seed     uint64 // which prompts, when MaxPrompts < rows
	Jobs     int
	// Calibrate is how many of the prompts also calibrate the profile's
	// sensitivity curves (RunOptions.Calibrate; 0: none).
	Calibrate int
	// CalibrationProgress, if set, is told after each calibration pass the
	// layers run so far and in all (Calibrate's progress).
	CalibrationProgress func(done, total int)
	Progress            func(done, total int, tokens int64)
}

// RunTask profiles a task's training prompts (a seeded sample of them) on
// an opened model.
func RunTask(ctx context.Context, m *runner.Model, man *manifests.Manifest, opt TaskOptions) (*Profile, error) {
	rows, name, gen, err := sampleRows(man, opt)
	if err != nil {
		return nil, err
	}
	prompts := make([][]int, len(rows))
	for i, r := range rows {
		prompts[i] = m.Tokenizer.Encode(man.Apply(r.Prompt), true)
		if len(prompts[i])+gen > m.Config.MaxPositionEmbeddings {
			return nil, fmt.Errorf("%s: row %d (%q): %d prompt tokens + %d generated exceed the model's context of %d", name, i+1, r.ID, len(prompts[i]), gen, m.Config.MaxPositionEmbeddings)
		}
	}
	ropt := RunOptions{GenTokens: gen, Jobs: opt.Jobs, Calibrate: opt.Calibrate, CalibrationProgress: opt.CalibrationProgress, Progress: func(done int, tokens int64) {
		if opt.Progress != nil {
			opt.Progress(done, len(prompts), tokens)
		}
	}}
	switch opt.Continue {
	case "", "greedy":
	case "stop":
		ropt.Stop = m.StopTokens(man.Stop)
	case "reference":
		ropt.Follow = make([][]int, len(rows))
		for i, r := range rows {
			if ropt.Follow[i], err = reference(m, man, name, i, r); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("unknown continuation %q (greedy, stop or reference)", opt.Continue)
	}
	p, err := Run(ctx, m, man.Name, prompts, ropt)
	if err != nil {
		return nil, err
	}
	p.Seed, p.Source = opt.Seed, name
	return p, nil
}

// reference is row i's reference as the tokens that follow its prompt
// (name: the rows' file, for the error of a row without one).
func reference(m *runner.Model, man *manifests.Manifest, name string, i int, r manifests.Row) ([]int, error) {
	if r.Reference == "" {
		return nil, fmt.Errorf("%s: row %d (%q) has no reference to follow its prompt", name, i+1, r.ID)
	}
	return m.Tokenizer.EncodeAfter(man.Apply(r.Prompt), man.ReferencePrefix+r.Reference), nil
}

// sampleRows reads the task's training rows (or opt.Data's) and keeps a
// seeded sample of opt.MaxPrompts of them, in file order; it returns them,
// the file's name and the tokens to follow each prompt (opt.GenTokens, or
// the manifest's where that is < 0).
func sampleRows(man *manifests.Manifest, opt TaskOptions) ([]manifests.Row, string, int, error) {
	gen := opt.GenTokens
	if gen < 0 {
		gen = man.GenTokens
	}
	rows, name, err := man.ReadRows("train", opt.Data)
	if err != nil {
		return nil, "", 0, err
	}
	if opt.MaxPrompts < 0 {
		return nil, "", 0, fmt.Errorf("--max-prompts must be ≥ 0, got %d", opt.MaxPrompts)
	}
	if opt.MaxPrompts > 0 && opt.MaxPrompts < len(rows) {
		rng := rand.New(rand.NewPCG(opt.Seed, 0x9f0f))
		keep := rng.Perm(len(rows))[:opt.MaxPrompts]
		mark := make([]bool, len(rows))
		for _, i := range keep {
			mark[i] = true
		}
		var sel []manifests.Row
		for i, r := range rows {
			if mark[i] {
				sel = append(sel, r)
			}
		}
		rows = sel
	}
	return rows, name, gen, nil
}

// TaskTexts are the texts a router is fitted on: each sampled training
// prompt followed by its reference (opt.Continue "reference", teacher-forced)
// or by opt.GenTokens greedy tokens of m ("greedy"), at most GenTokens
// (-1: the manifest's) either way; a text counts from its prompt's end.
func TaskTexts(m *runner.Model, man *manifests.Manifest, opt TaskOptions) ([]Text, error) {
	rows, name, gen, err := sampleRows(man, opt)
	if err != nil {
		return nil, err
	}
	if gen < 1 {
		return nil, fmt.Errorf("%s: texts need at least one token after each prompt, got --gen-tokens %d", name, gen)
	}
	prompts, longest := make([][]int, len(rows)), 0
	for i, r := range rows {
		prompts[i] = m.Tokenizer.Encode(man.Apply(r.Prompt), true)
		longest = max(longest, len(prompts[i])+gen)
	}
	var pool *kernels.Pool
	var s *runner.State
	texts := make([]Text, 0, len(rows))
	for i, r := range rows {
		prompt := prompts[i]
		var follow []int
		switch opt.Continue {
		case "reference":
			if follow, err = reference(m, man, name, i, r); err != nil {
				return nil, err
			}
		case "", "greedy":
			if s == nil {
				pool = kernels.NewPool(max(1, opt.Jobs))
				defer pool.Close()
				if s, err = m.NewState(pool, min(longest, m.Config.MaxPositionEmbeddings)); err != nil {
					return nil, err
				}
				defer s.Close()
			}
			if len(prompt)+gen > s.Ctx {
				return nil, fmt.Errorf("%s: row %d (%q): %d prompt tokens + %d generated exceed the model's context of %d", name, i+1, r.ID, len(prompt), gen, s.Ctx)
			}
			logits, err := s.ForwardBatch(prompt, 0, runner.Pass{})
			for err == nil && len(follow) < gen {
				follow = append(follow, runner.Argmax(logits))
				if len(follow) < gen {
					logits, err = s.Forward(follow[len(follow)-1], len(prompt)+len(follow)-1)
				}
			}
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown continuation %q (greedy or reference)", opt.Continue)
		}
		follow = follow[:min(len(follow), gen)]
		if len(follow) == 0 {
			continue
		}
		if len(prompt)+len(follow) > m.Config.MaxPositionEmbeddings {
			return nil, fmt.Errorf("%s: row %d (%q): %d prompt and %d following tokens exceed the model's context of %d", name, i+1, r.ID, len(prompt), len(follow), m.Config.MaxPositionEmbeddings)
		}
		texts = append(texts, Text{Tokens: append(prompt, follow...), From: len(prompt)})
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("%s: no texts", name)
	}
	return texts, nil
}

// CachePath is where a task profile of a model is cached.
func CachePath(modelHash [format.HashSize]byte, task string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "sipack", hex.EncodeToString(modelHash[:8]), task+".prof")
}

// Summary is one line on a finished run: prompts, tokens and throughput.
func Summary(p *Profile, took time.Duration) string {
	secs := took.Seconds()
	return fmt.Sprintf("profiled task %s: %d prompts, %d tokens (%s) in %.1f s, %.1f tokens/s",
		p.Task, p.Prompts, p.Tokens, p.Followed(), secs, float64(p.Tokens)/secs)
}
