// Package manifests describes tasks: a prompt template, profiling (train) and
// evaluation data, generation lengths and a metric. The built-in tasks (qa,
// translate, lm, summarize) and their data for the tiny model are embedded;
// a user adds a task by writing a manifest JSON file, no code change, and
// points any task at their own JSONL data.
package manifests

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sipack/sipack/internal/tmpfile"
)

//go:embed *.json data/*.jsonl
var builtin embed.FS

// Metrics a manifest may name.
var Metrics = []string{"bleu", "qa", "rougeL", "perplexity"}

// Manifest is one task.
type Manifest struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Template     string   `json:"template"` // must contain {prompt}
	Train        string   `json:"train"`    // JSONL for profiling; relative to the manifest
	Eval         string   `json:"eval"`     // JSONL for evaluation
	GenTokens    int      `json:"gen_tokens"`
	MaxNewTokens int      `json:"max_new_tokens"`
	Stop         []string `json:"stop"` // generation stops at a token containing one; absent: ["\n"]
	Metric       string   `json:"metric"`
	// ReferencePrefix goes before a row's reference where the reference is
	// scored or followed as text after the prompt (the perplexity metric,
	// profiles with --continue reference): the references are stored
	// trimmed, as outputs are compared, while the model writes " live"
	// after "Answer:".
	ReferencePrefix string `json:"reference_prefix,omitempty"`

	source string // where it was read from, for errors
	fsys   fs.FS  // where relative data paths resolve
	dir    string
}

// Source names the file the manifest came from.
func (m *Manifest) Source() string { return m.source }

// Row is one JSONL example.
type Row struct {
	ID        string `json:"id"`
	Prompt    string `json:"prompt"`
	Reference string `json:"reference"`
	Kind      string `json:"kind"`
}

// Apply fills the template with a row's prompt.
func (m *Manifest) Apply(prompt string) string {
	return strings.ReplaceAll(m.Template, "{prompt}", prompt)
}

// Parse reads and checks a manifest. name is used in errors.
func Parse(name string, raw []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	m := &Manifest{}
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", name, err)
	}
	m.source = name
	var missing []string
	if m.Name == "" {
		missing = append(missing, "name")
	}
	if m.Template == "" {
		missing = append(missing, "template")
	}
	if m.Metric == "" {
		missing = append(missing, "metric")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("manifest %s: missing fields: %s", name, strings.Join(missing, ", "))
	}
	if !strings.Contains(m.Template, "{prompt}") {
		return nil, fmt.Errorf("manifest %s: template %q has no {prompt}", name, m.Template)
	}
	known := false
	for _, k := range Metrics {
		known = known || k == m.Metric
	}
	if !known {
		return nil, fmt.Errorf("manifest %s: unknown metric %q (known: %s)", name, m.Metric, strings.Join(Metrics, ", "))
	}
	if m.GenTokens == 0 {
		m.GenTokens = 128
	}
	if m.MaxNewTokens == 0 {
		m.MaxNewTokens = 64
	}
	if m.Stop == nil {
		m.Stop = []string{"\n"} // what every task stopped at before stop was read
	}
	for i, s := range m.Stop {
		if s == "" {
			return nil, fmt.Errorf("manifest %s: stop string %d is empty (it would stop at every token)", name, i+1)
		}
	}
	if m.GenTokens < 0 || m.MaxNewTokens < 0 {
		return nil, fmt.Errorf("manifest %s: gen_tokens and max_new_tokens must be positive", name)
	}
	return m, nil
}

// Builtin returns the names of the embedded tasks.
func Builtin() []string {
	entries, _ := fs.ReadDir(builtin, ".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Load finds a task: a path to a manifest file (anything ending in .json or
// containing a path separator), a manifest NAME.json in one of dirs, or a
// built-in task name.
func Load(task string, dirs ...string) (*Manifest, error) {
	if strings.HasSuffix(task, ".json") || strings.ContainsRune(task, os.PathSeparator) {
		raw, err := tmpfile.ReadFile(task)
		if err != nil {
			return nil, err
		}
		m, err := Parse(task, raw)
		if err != nil {
			return nil, err
		}
		m.fsys, m.dir = os.DirFS(filepath.Dir(task)), "."
		return m, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, task+".json")
		if _, err := os.Stat(p); err == nil {
			return Load(p)
		}
	}
	raw, err := builtin.ReadFile(task + ".json")
	if err != nil {
		return nil, fmt.Errorf("unknown task %q (built-in tasks: %s; or give a manifest file)", task, strings.Join(Builtin(), ", "))
	}
	m, err := Parse("built-in "+task+".json", raw)
	if err != nil {
		return nil, err
	}
	m.fsys, m.dir = builtin, "."
	return m, nil
}

// maxRowBytes caps one JSONL line.
const maxRowBytes = 1 << 20

// ReadRows reads a JSONL data file: a path given by the user (override, read
// from disk), or else the manifest's file of the given kind ("train", "eval").
// Every line must be a JSON object with a non-empty "prompt"; errors name the
// file and line.
func (m *Manifest) ReadRows(kind, override string) ([]Row, string, error) {
	var r io.Reader
	name := override
	if override != "" {
		f, err := tmpfile.Open(override)
		if err != nil {
			return nil, name, err
		}
		defer f.Close()
		r = f
	} else {
		rel := m.Train
		if kind == "eval" {
			rel = m.Eval
		}
		if rel == "" {
			return nil, "", fmt.Errorf("task %s (%s) has no %s data: pass a JSONL file with --data", m.Name, m.source, kind)
		}
		name = rel
		if m.fsys == nil {
			return nil, name, fmt.Errorf("task %s: no data location", m.Name)
		}
		f, err := m.fsys.Open(path.Join(m.dir, rel))
		if err != nil {
			return nil, name, fmt.Errorf("task %s: %w", m.Name, err)
		}
		defer f.Close()
		r = f
	}
	rows, err := ParseRows(name, r)
	return rows, name, err
}

// ParseRows reads JSONL rows from r; name is used in errors.
func ParseRows(name string, r io.Reader) ([]Row, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRowBytes)
	var rows []Row
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var row Row
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if row.Prompt == "" {
			return nil, fmt.Errorf("%s:%d: row has no \"prompt\"", name, line)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxRowBytes)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return rows, nil
}
