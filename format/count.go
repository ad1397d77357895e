package format

import "math"

// Count is the one rule that turns a fraction f of n neurons (γ, φ, δ, α)
// into a number of neurons: ⌊f·n + 0.01⌋, clamped to [0, n]. The 0.01
// absorbs the rounding of fractions stored or parsed as float32 or decimal
// (0.7·1000 is 699.99998 in float32) without changing any count a user
// could mean: f·n must come within 0.01 of the next integer to round up.
// Everything after the command line compares counts, never fractions
// (SPEC.md, "Fractions and counts").
func Count(f float64, n int) int {
	if !(f > 0) || n <= 0 {
		return 0
	}
	return min(n, int(math.Floor(f*float64(n)+0.01)))
}
