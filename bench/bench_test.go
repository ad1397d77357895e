package bench

import (
	"strings"
	"testing"
)

// TestRunRefusesBadOptions: every out-of-range option is refused by name
// before anything is measured (the FMA peak alone takes a while).
func TestRunRefusesBadOptions(t *testing.T) {
	good := Options{Threads: 1, Tokens: 1, Rounds: 1, Prefill: 1}
	for _, c := range []struct {
		paths []string
		edit  func(*Options)
		want  string
	}{
		{nil, func(*Options) {}, "no packs"},
		{[]string{"p.sip"}, func(o *Options) { o.Threads = 0 }, "threads"},
		{[]string{"p.sip"}, func(o *Options) { o.Rounds = 0 }, "rounds"},
		{[]string{"p.sip"}, func(o *Options) { o.Tokens = -1 }, "tokens"},
		{[]string{"p.sip"}, func(o *Options) { o.Prefill = 0 }, "prefill"},
	} {
		o := good
		c.edit(&o)
		if _, err := Run(c.paths, o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.v); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}
