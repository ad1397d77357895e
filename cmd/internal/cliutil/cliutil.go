// Package cliutil holds what both command-line tools share: a progress bar
// that appears only on a terminal, and a context cancelled by SIGINT/SIGTERM.
package cliutil

import (
	"context"
	"fmt"
	"github.com/sipack/sipack/format"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// SignalContext is cancelled on SIGINT or SIGTERM, so long work can stop
// between steps and clean up its temporary files.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Progress is a byte or item counter: a bar with an ETA on a terminal and,
// off a terminal (a log, CI, a pipe), one line on stderr every few seconds
// (ProgressEvery, or $SIPACK_PROGRESS_EVERY as a Go duration), as
// llama.cpp does for long loads.
type Progress struct {
	p   *mpb.Progress
	bar *mpb.Bar

	mu           sync.Mutex
	name         string
	bytes        bool
	total, done  int64
	start, last  time.Time // start of the work, last increment
	lastLine     time.Time // last line printed off a terminal
	every        time.Duration
	out          io.Writer
	lineProgress bool
}

// ProgressEvery is how often a Progress off a terminal prints a line.
var ProgressEvery = 5 * time.Second

// NewProgress starts a bar named name of total units (bytes when bytes is set).
func NewProgress(name string, total int64, bytes bool) *Progress {
	now := time.Now()
	pr := &Progress{name: name, bytes: bytes, total: total, start: now, last: now, lastLine: now, out: os.Stderr}
	if !IsTerminal(os.Stderr) {
		pr.lineProgress, pr.every = true, ProgressEvery
		if d, err := time.ParseDuration(os.Getenv("SIPACK_PROGRESS_EVERY")); err == nil && d > 0 {
			pr.every = d
		}
		return pr
	}
	p := mpb.New(mpb.WithOutput(os.Stderr), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
	counter := decor.CountersNoUnit("%d / %d")
	if bytes {
		counter = decor.Counters(decor.SizeB1024(0), "% .1f / % .1f")
	}
	// The EWMA ETA averages the time per unit of the increments it is given
	// (EwmaIncrBy with the increment's duration); 30 is the window in increments.
	bar := p.AddBar(total,
		mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR), counter),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" ETA "), decor.EwmaETA(decor.ET_STYLE_GO, 30)),
	)
	pr.p, pr.bar = p, bar
	return pr
}

// SetTotal changes the expected total.
func (p *Progress) SetTotal(total int64) {
	if p.bar != nil {
		p.bar.SetTotal(total, false)
	}
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

// Add counts n more units done.
func (p *Progress) Add(n int) {
	if p.bar == nil && !p.lineProgress {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	dur := now.Sub(p.last)
	p.last = now
	p.done += int64(n)
	if p.bar != nil {
		p.bar.EwmaIncrBy(n, dur)
		return
	}
	if now.Sub(p.lastLine) >= p.every {
		p.lastLine = now
		fmt.Fprintln(p.out, p.line(now))
	}
}

// line is the off-terminal progress line: done / total, percent, elapsed, ETA.
func (p *Progress) line(now time.Time) string {
	count := func(n int64) string {
		if p.bytes {
			return HumanBytes(uint64(max(n, 0)))
		}
		return strconv.FormatInt(n, 10)
	}
	elapsed := now.Sub(p.start)
	s := fmt.Sprintf("%s: %s", p.name, count(p.done))
	if p.total > 0 {
		s += fmt.Sprintf(" / %s (%.0f %%)", count(p.total), 100*float64(p.done)/float64(p.total))
	}
	s += fmt.Sprintf(", %s elapsed", elapsed.Round(time.Second))
	if p.total > 0 && p.done > 0 && p.done < p.total {
		eta := time.Duration(float64(elapsed) * float64(p.total-p.done) / float64(p.done))
		s += fmt.Sprintf(", about %s left", eta.Round(time.Second))
	}
	return s
}

// Done finishes the bar (abort when the work failed) and waits for it to draw.
func (p *Progress) Done(ok bool) {
	if p.bar == nil {
		return
	}
	if ok {
		p.bar.SetTotal(-1, true)
	} else {
		p.bar.Abort(false)
	}
	p.p.Wait()
}

// HumanBytes formats n with binary units (format.HumanBytes).
func HumanBytes(n uint64) string { return format.HumanBytes(n) }

// Fail prints err as "name: err" on stderr. Commands return it via cli.Exit.
func Fail(w io.Writer, name string, err error) {
	fmt.Fprintf(w, "%s: error: %v\n", name, err)
}

// ParseBytes parses sizes such as "1.5GiB", "800MB", "4096" (bytes).
func ParseBytes(s string) (uint64, error) {
	units := []struct {
		suffix string
		mul    float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	num, mul := s, 1.0
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v <= 0 || v*mul > 1<<62 {
		return 0, fmt.Errorf("cannot parse size %q (want e.g. 1.5GiB, 800MB)", s)
	}
	return uint64(v * mul), nil
}

// PhysicalCores counts distinct (physical id, core id) pairs in
// /proc/cpuinfo, falling back to the logical CPU count.
func PhysicalCores() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.NumCPU()
	}
	seen := map[string]bool{}
	phys := ""
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			seen[phys+"/"+strings.TrimSpace(v)] = true
		}
	}
	if len(seen) == 0 {
		return runtime.NumCPU()
	}
	return min(len(seen), runtime.NumCPU())
}
