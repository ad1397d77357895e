package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/manifests"
)

// OrderOptions says how to rank a model directory's neurons by profiles.
type OrderOptions struct {
	ModelDir string
	// Task is the task profile: a .prof file, or a task name (or manifest)
	// profiled on the fly and cached.
	Task string
	// Secondary is the model-wide score's profiles: "all" (every task with
	// training data), "self" (the task profile), or FILE,FILE,...
	Secondary   string
	Base        float64 // δ: fraction of each layer ranked by the task score
	DenseLayers []int
	Manifests   []string // extra manifest directories
	// MaxPrompts caps the prompts of a profile made on the fly (0: all);
	// each is followed by the manifest's greedy tokens, and the task's
	// profile (not the secondary ones) is calibrated over DefaultCalibrate
	// of them when the layer budgets read its sensitivity.
	MaxPrompts int
	// LayerBudget is how the sparse layers share γ, δ and φ: "auto" or ""
	// (by the task profile's sensitivity where it has one, else
	// uniformly), "sensitivity" (the profile must have one) or "uniform"
	// (the same fraction in every layer, as SelectInfer).
	LayerBudget string
	Jobs        int // prompts run concurrently; 0: one per CPU
	Seed        uint64
	// Progress, if set, is called after each prompt profiled on the fly.
	Progress func(task string, done, total int, tokens int64)
	// Log, if set, is told which cached profile is used or written, and
	// the throughput of each run on the fly.
	Log func(msg string)
}

// Order ranks the sparse layers of opt.ModelDir as SelectInfer does (see
// RankOrder) and records the secondary tasks in the order's provenance.
// Profiles of another model or shape are refused with ErrOtherModel.
func Order(ctx context.Context, opt OrderOptions) (*convert.Order, error) {
	m, err := convert.OpenModel(opt.ModelDir)
	if err != nil {
		return nil, err
	}
	cfg, hash := m.Config, m.SourceHash()
	sparse := convert.SparseLayers(cfg, opt.DenseLayers)
	m.Close()
	switch opt.LayerBudget {
	case "", "auto", "sensitivity", "uniform":
	default:
		return nil, fmt.Errorf("unknown --layer-budget %q (want auto, sensitivity or uniform)", opt.LayerBudget)
	}
	r := &resolver{opt: opt, ctx: ctx, hash: hash}
	defer r.close()
	task, err := r.get(opt.Task, opt.LayerBudget != "uniform")
	if err != nil {
		return nil, err
	}
	if err := Check(task, cfg, hash, opt.Task); err != nil {
		return nil, err
	}
	var secondary []*Profile
	switch sec := opt.Secondary; sec {
	case "self":
		secondary = []*Profile{task}
	case "all", "":
		r.log("--secondary all: the neurons past δ are ranked by the mean profile of every built-in task with data (each profiled on the fly unless cached; --secondary self or FILE,... avoids that)")
		for _, name := range manifests.Builtin() {
			man, err := manifests.Load(name, opt.Manifests...)
			if err != nil {
				return nil, err
			}
			if man.Train == "" {
				continue // no data: summarize needs a user's file
			}
			p := task
			if task.Task != name {
				if p, err = r.get(name, false); err != nil {
					return nil, err
				}
			}
			secondary = append(secondary, p)
		}
	default:
		for _, f := range strings.Split(sec, ",") {
			p, err := Read(f)
			if err != nil {
				return nil, err
			}
			if err := Check(p, cfg, hash, f); err != nil {
				return nil, err
			}
			secondary = append(secondary, p)
		}
	}
	var budgets [][]float32
	switch opt.LayerBudget {
	case "", "auto", "sensitivity":
		if task.Sensitivity == nil {
			if opt.LayerBudget == "sensitivity" {
				return nil, fmt.Errorf("--layer-budget sensitivity: the task profile %s has no sensitivity curves (made without sipack profile --calibrate)", opt.Task)
			}
			r.log("layer budgets: uniform (the task profile has no sensitivity curves; sipack profile --calibrate makes them)")
			break
		}
		if budgets, err = Budgets(task, sparse); err != nil {
			return nil, err
		}
	}
	order, err := RankOrder(task, SecondaryScores(secondary), opt.Base, sparse, budgets)
	if err != nil {
		return nil, err
	}
	for _, p := range secondary {
		order.Provenance.SecondaryTasks = append(order.Provenance.SecondaryTasks, p.Task)
	}
	return order, nil
}

// resolver finds task profiles: a file, the cache, or a run on the fly
// (the model converted and opened once, on first need).
type resolver struct {
	opt    OrderOptions
	ctx    context.Context
	hash   [format.HashSize]byte
	opened *Opened
}

func (r *resolver) close() {
	if r.opened != nil {
		r.opened.Close()
	}
}

func (r *resolver) log(format string, args ...any) {
	if r.opt.Log != nil {
		r.opt.Log(fmt.Sprintf(format, args...))
	}
}

// get finds the profile spec names: a file, or a task profiled on the fly
// (cached), calibrated when calibrate is set. An uncalibrated need is met
// by a cached calibrated profile too.
func (r *resolver) get(spec string, calibrate bool) (*Profile, error) {
	if st, err := os.Stat(spec); err == nil && !st.IsDir() && !strings.HasSuffix(spec, ".json") {
		return Read(spec) // a profile file; a .json file is a task manifest
	}
	if strings.HasSuffix(spec, ".prof") {
		return nil, fmt.Errorf("profile file %s: no such file", spec)
	}
	man, err := manifests.Load(spec, r.opt.Manifests...)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s-p%d-s%d", man.Name, r.opt.MaxPrompts, r.opt.Seed)
	calibrated := CachePath(r.hash, key+fmt.Sprintf("-c%d-f%d", DefaultCalibrate, CalibrationFollowers))
	cache := calibrated
	if !calibrate {
		if p, err := Read(calibrated); err == nil {
			r.log("using cached profile %s", calibrated)
			return p, nil
		}
		cache = CachePath(r.hash, key)
	}
	if p, err := Read(cache); err == nil {
		r.log("using cached profile %s", cache)
		return p, nil
	}
	if r.opened == nil {
		if r.opened, err = Open(r.ctx, r.opt.ModelDir); err != nil {
			return nil, err
		}
	}
	topt := TaskOptions{MaxPrompts: r.opt.MaxPrompts, GenTokens: -1, Seed: r.opt.Seed, Jobs: r.opt.Jobs}
	if calibrate {
		topt.Calibrate = DefaultCalibrate
	}
	if topt.Jobs == 0 {
		topt.Jobs = runtime.NumCPU()
	}
	if r.opt.Progress != nil {
		topt.Progress = func(done, total int, tokens int64) { r.opt.Progress(man.Name, done, total, tokens) }
	}
	prompts := "all its training prompts"
	if topt.MaxPrompts > 0 {
		prompts = fmt.Sprintf("at most %d training prompts", topt.MaxPrompts)
	}
	gen := "the manifest's generated tokens"
	r.log("no cached profile of task %s: profiling it now with the dense model over %s (+ %s each, %d jobs); this can take minutes, progress follows; the result is cached in %s", man.Name, prompts, gen, topt.Jobs, cache)
	start := time.Now()
	p, err := RunTask(r.ctx, r.opened.Model, man, topt)
	if err != nil {
		return nil, err
	}
	r.log("%s", Summary(p, time.Since(start)))
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err == nil {
		if err := Write(cache, p); err == nil {
			r.log("cached profile %s", cache)
		}
	}
	return p, nil
}
