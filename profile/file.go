package profile

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
)

// FileFormat tags profile files (their "format" field).
const FileFormat = "sipack-profile"

// Profile is a task's FFN activation profile of one model: per layer, per
// original neuron, the sum of |h| over every profiled token (h = the input of
// down_proj). Profiles of the same model and task add.
type Profile struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Task      string `json:"task"`
	Prompts   int64  `json:"prompts"`
	Tokens    int64  `json:"tokens"`     // prompt + generated tokens profiled
	GenTokens int    `json:"gen_tokens"` // generated per prompt (at most, with Continue)
	// Continue is what followed each prompt: "" for GenTokens greedy tokens
	// (the method's), "stop" for greedy ones up to the task's stop string,
	// "reference" for the row's reference (profile.TaskOptions.Continue).
	Continue  string      `json:"continue,omitempty"`
	Seed      uint64      `json:"seed"`
	ModelHash string      `json:"model_hash"` // hex BLAKE3 source identity; "" = unknown (imported lists)
	Source    string      `json:"source,omitempty"`
	Layers    int         `json:"layers"`
	Neurons   int         `json:"neurons"`
	Sums      [][]float64 `json:"sums"` // [layer][neuron]
	// Sensitivity, optional (Calibrate), is what each layer's FFN is worth
	// to the profiled text: Sensitivity[l][i] is the mean negative log-
	// likelihood per token of the text that followed the calibration
	// prompts with layer l restricted to the top SensitivityFractions[i]
	// of its neurons by these sums and every other layer whole;
	// SensitivityDense the same with every layer whole. Layer budgets
	// (Budgets) are made from it.
	SensitivityFractions []float64   `json:"sensitivity_fractions,omitempty"`
	Sensitivity          [][]float64 `json:"sensitivity,omitempty"`
	SensitivityDense     float64     `json:"sensitivity_dense,omitempty"`
	SensitivityPrompts   int         `json:"sensitivity_prompts,omitempty"`
	// SensitivityFollowers caps the tokens after each prompt the loss
	// counted (CalibrationFollowers); 0 in files made before the cap.
	SensitivityFollowers int `json:"sensitivity_followers,omitempty"`
}

// maxProfileBytes caps a profile file before it is parsed.
const maxProfileBytes = 1 << 30

// Parse decodes and validates profile JSON; name is used in errors.
func Parse(name string, r io.Reader) (*Profile, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	if len(raw) > maxProfileBytes {
		return nil, fmt.Errorf("profile %s: larger than %d bytes", name, maxProfileBytes)
	}
	p := &Profile{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return p, nil
}

// Validate checks the fields against each other.
func (p *Profile) Validate() error {
	switch {
	case p.Format != FileFormat:
		return fmt.Errorf("not a sipack profile (format %q)", p.Format)
	case p.Version != 1 && p.Version != 2:
		return fmt.Errorf("unsupported profile version %d", p.Version)
	case p.Continue != "" && p.Continue != "stop" && p.Continue != "reference":
		return fmt.Errorf("unknown continuation %q (stop, reference, or none for greedy)", p.Continue)
	case p.Version != versionOf(p.Continue):
		return fmt.Errorf("a version %d profile with continuation %q (version 2 profiles, and only they, follow their prompts otherwise than greedily)", p.Version, continueName(p.Continue))
	case p.Layers <= 0 || p.Layers > format.MaxLayers:
		return fmt.Errorf("layers %d out of range", p.Layers)
	case p.Neurons <= 0 || p.Neurons > format.MaxNeurons:
		return fmt.Errorf("neurons %d out of range", p.Neurons)
	case p.Tokens <= 0 || p.Prompts < 0:
		return fmt.Errorf("token count %d must be positive", p.Tokens)
	case len(p.Sums) != p.Layers:
		return fmt.Errorf("%d layers of sums, header says %d", len(p.Sums), p.Layers)
	}
	if p.ModelHash != "" {
		if b, err := hex.DecodeString(p.ModelHash); err != nil || len(b) != format.HashSize {
			return fmt.Errorf("model_hash %q is not 64 hex digits", p.ModelHash)
		}
	}
	if err := p.validateSensitivity(); err != nil {
		return err
	}
	for l, s := range p.Sums {
		if len(s) != p.Neurons {
			return fmt.Errorf("layer %d has %d sums, header says %d neurons", l, len(s), p.Neurons)
		}
		for n, v := range s {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("layer %d neuron %d: sum %v is not a finite non-negative number", l, n, v)
			}
		}
	}
	return nil
}

// validateSensitivity checks the optional calibration: fractions strictly
// rising in (0, 1), one finite loss per layer and fraction.
func (p *Profile) validateSensitivity() error {
	if p.Sensitivity == nil && p.SensitivityFractions == nil {
		return nil
	}
	fr := p.SensitivityFractions
	if len(fr) == 0 || len(p.Sensitivity) != p.Layers {
		return fmt.Errorf("sensitivity: %d layers of curves over %d fractions, header says %d layers", len(p.Sensitivity), len(fr), p.Layers)
	}
	for i, f := range fr {
		if !(f > 0 && f < 1) || (i > 0 && f <= fr[i-1]) {
			return fmt.Errorf("sensitivity fractions %v must rise strictly within (0, 1)", fr)
		}
	}
	if math.IsNaN(p.SensitivityDense) || math.IsInf(p.SensitivityDense, 0) || p.SensitivityDense < 0 {
		return fmt.Errorf("sensitivity: dense loss %v is not a finite non-negative number", p.SensitivityDense)
	}
	for l, c := range p.Sensitivity {
		if len(c) != len(fr) {
			return fmt.Errorf("sensitivity: layer %d has %d points for %d fractions", l, len(c), len(fr))
		}
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("sensitivity: layer %d loss %v is not a finite non-negative number", l, v)
			}
		}
	}
	return nil
}

// Read reads a profile file (a regular file: a named pipe is refused, not
// waited on).
func Read(path string) (*Profile, error) {
	f, err := tmpfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Write writes p to path through a temporary file (tmpfile.Name), renamed
// into place when complete; a path that exists and is not a regular file
// (/dev/null, a named pipe) is refused, never renamed over.
func Write(path string, p *Profile) (err error) {
	if err := p.Validate(); err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := tmpfile.CheckOutput(path); err != nil {
		return err
	}
	tmp := tmpfile.Name(path)
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return tmpfile.Rename(tmp, path)
}

// Merge adds b into a copy of a: both must be profiles of the same model and
// shape. Tasks may differ only if both are named; the result names both.
func Merge(a, b *Profile) (*Profile, error) {
	if a.ModelHash != b.ModelHash {
		return nil, fmt.Errorf("profiles are of different models (%.16s… and %.16s…)", a.ModelHash, b.ModelHash)
	}
	if a.Layers != b.Layers || a.Neurons != b.Neurons {
		return nil, fmt.Errorf("profiles have different shapes (%d×%d and %d×%d)", a.Layers, a.Neurons, b.Layers, b.Neurons)
	}
	if a.GenTokens != b.GenTokens {
		return nil, fmt.Errorf("profiles generated different token counts per prompt (%d and %d)", a.GenTokens, b.GenTokens)
	}
	if a.Continue != b.Continue {
		return nil, fmt.Errorf("profiles followed their prompts differently (%s and %s)", continueName(a.Continue), continueName(b.Continue))
	}
	out := *a
	if a.Task != b.Task {
		out.Task = a.Task + "+" + b.Task
	}
	out.Prompts += b.Prompts
	out.Tokens += b.Tokens
	// Calibrations of the same fractions average, each weighted by the
	// prompts it ran; otherwise the merge has none (its order changed).
	out.SensitivityFractions, out.Sensitivity, out.SensitivityDense, out.SensitivityPrompts, out.SensitivityFollowers = nil, nil, 0, 0, 0
	if a.Sensitivity != nil && b.Sensitivity != nil && slices.Equal(a.SensitivityFractions, b.SensitivityFractions) {
		wa := 0.5
		if n := a.SensitivityPrompts + b.SensitivityPrompts; n > 0 {
			wa = float64(a.SensitivityPrompts) / float64(n)
		}
		mix := func(x, y float64) float64 { return wa*x + (1-wa)*y }
		out.SensitivityFractions = slices.Clone(a.SensitivityFractions)
		out.SensitivityDense = mix(a.SensitivityDense, b.SensitivityDense)
		out.SensitivityPrompts = a.SensitivityPrompts + b.SensitivityPrompts
		if a.SensitivityFollowers == b.SensitivityFollowers {
			out.SensitivityFollowers = a.SensitivityFollowers
		}
		out.Sensitivity = make([][]float64, a.Layers)
		for l := range out.Sensitivity {
			out.Sensitivity[l] = make([]float64, len(a.SensitivityFractions))
			for i := range out.Sensitivity[l] {
				out.Sensitivity[l][i] = mix(a.Sensitivity[l][i], b.Sensitivity[l][i])
			}
		}
	}
	out.Sums = make([][]float64, a.Layers)
	for l := range out.Sums {
		out.Sums[l] = make([]float64, a.Neurons)
		for n := range out.Sums[l] {
			out.Sums[l][n] = a.Sums[l][n] + b.Sums[l][n]
		}
	}
	return &out, nil
}

// Scores returns per layer the mean |h| per token of every neuron.
func (p *Profile) Scores() [][]float64 {
	out := make([][]float64, p.Layers)
	for l, s := range p.Sums {
		out[l] = make([]float64, len(s))
		for n, v := range s {
			out[l][n] = v / float64(p.Tokens)
		}
	}
	return out
}

// TopOverlap is |A ∩ B| / |A| for the top ⌊f·N⌋ entries A of a and B of b
// (ties by index).
func TopOverlap(a, b []float64, f float64) float64 {
	k := int(f * float64(len(a)))
	if k == 0 {
		return 0
	}
	top := func(s []float64) map[int]bool {
		m := map[int]bool{}
		for _, i := range byScore(s)[:k] {
			m[i] = true
		}
		return m
	}
	ta, tb := top(a), top(b)
	n := 0
	for i := range ta {
		if tb[i] {
			n++
		}
	}
	return float64(n) / float64(k)
}

// ErrOtherModel is returned when a profile belongs to another model or shape.
var ErrOtherModel = errors.New("profile is of another model")

// SameCounts reports whether a and b hold the same task, prompt and token
// counts and identical sums: the same prompts profiled twice (or one file
// copied), which Merge would count twice.
func SameCounts(a, b *Profile) bool {
	if a.Task != b.Task || a.Prompts != b.Prompts || a.Tokens != b.Tokens || a.Layers != b.Layers || a.Neurons != b.Neurons {
		return false
	}
	for l := range a.Sums {
		if !slices.Equal(a.Sums[l], b.Sums[l]) {
			return false
		}
	}
	return true
}

// continueName names a profile's continuation for messages.
func continueName(c string) string {
	if c == "" {
		return "greedy"
	}
	return c
}

// versionOf is the file version of a profile with continuation c: 2 where
// its prompts were followed otherwise than by greedy tokens, so that a
// reader that knows only version 1 refuses it instead of taking it for a
// greedy profile.
func versionOf(c string) int {
	if c == "" {
		return 1
	}
	return 2
}

// Followed says what followed each of the profile's prompts, for summaries.
func (p *Profile) Followed() string {
	switch p.Continue {
	case "stop":
		return fmt.Sprintf("greedy tokens up to the task's stop string after each prompt (at most %d)", p.GenTokens)
	case "reference":
		return fmt.Sprintf("each prompt followed by its reference (at most %d tokens)", p.GenTokens)
	}
	return fmt.Sprintf("%d generated per prompt", p.GenTokens)
}
