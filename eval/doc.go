// Package eval scores a loaded pack on a task: it runs the manifest's eval
// rows (greedy generation that honours the manifest's stop strings and EOS,
// or the reference's likelihood for perplexity tasks), computes the
// manifest's metric (corpus BLEU, exact match and token F1, ROUGE-L,
// perplexity) and the speed it ran at; and the windowed perplexity of a text.
//
// It refuses rows without a reference where the metric needs one, a prompt
// that leaves no room in the model's context, and a selection whose φ the
// loaded prefix cannot compute; errors name the data file and row.
package eval
