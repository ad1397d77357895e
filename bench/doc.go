// Package bench measures the machine and the packs run on it: peak RSS,
// read bandwidth and FMA peak, and decode/prefill speed of a pack on a γ×φ
// grid in interleaved rounds with medians and ratios taken within a round.
//
// It refuses nothing about packs that the runner accepts; it builds no
// packs (sipack synth does) and draws nothing (sipack plot does), so that
// what ships to a device carries neither the converter nor a plotting
// library.
package bench
