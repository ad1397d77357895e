package tokenizer

import "unicode"

// splitLlama3 splits text the way the Llama-3 / Qwen2 pre-tokenizer regex does:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// with maxDigits = 3 (Llama-3) or 1 (Qwen2, whose pattern has \p{N}). Go's
// regexp has no look-ahead, so the alternatives are matched by hand, in
// order, at each position; the comments name the alternative.
func splitLlama3(text string, maxDigits int) []string {
	rs := []rune(text)
	var out []string
	for i := 0; i < len(rs); {
		j := matchAt(rs, i, maxDigits)
		out = append(out, string(rs[i:j]))
		i = j
	}
	return out
}

func isL(r rune) bool     { return unicode.IsLetter(r) }
func isN(r rune) bool     { return unicode.IsNumber(r) }
func isSpace(r rune) bool { return unicode.IsSpace(r) }
func isNL(r rune) bool    { return r == '\r' || r == '\n' }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return !isSpace(r) && !isL(r) && !isN(r) }

// foldEq compares case-insensitively as the (?i) flag does for these letters.
func foldEq(r rune, lower rune) bool {
	if unicode.ToLower(r) == lower {
		return true
	}
	return lower == 's' && r == 'ſ' // U+017F folds to s
}

// matchAt returns the end of the match starting at i (always > i).
func matchAt(rs []rune, i, maxDigits int) int {
	n := len(rs)
	r := rs[i]
	at := func(k int) rune {
		if k < n {
			return rs[k]
		}
		return -1
	}
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r == '\'' && i+1 < n {
		a, b := at(i+1), at(i+2)
		switch {
		case foldEq(a, 'r') && b >= 0 && foldEq(b, 'e'),
			foldEq(a, 'v') && b >= 0 && foldEq(b, 'e'),
			foldEq(a, 'l') && b >= 0 && foldEq(b, 'l'):
			return i + 3
		case foldEq(a, 's'), foldEq(a, 't'), foldEq(a, 'm'), foldEq(a, 'd'):
			return i + 2
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(r) || (!isNL(r) && !isN(r) && i+1 < n && isL(rs[i+1])) {
		j := i + 1
		for j < n && isL(rs[j]) {
			j++
		}
		return j
	}
	// \p{N}{1,maxDigits}
	if isN(r) {
		j := i + 1
		for j < n && j-i < maxDigits && isN(rs[j]) {
			j++
		}
		return j
	}
	// ' '?[^\s\p{L}\p{N}]+[\r\n]*
	if isOther(r) || (r == ' ' && i+1 < n && isOther(rs[i+1])) {
		j := i + 1
		for j < n && isOther(rs[j]) {
			j++
		}
		for j < n && isNL(rs[j]) {
			j++
		}
		return j
	}
	// r is whitespace from here on. Find the whole run [i, end).
	end := i
	for end < n && isSpace(rs[end]) {
		end++
	}
	// \s*[\r\n]+ : the greedy \s* backs off to the last newline of the run.
	for k := end - 1; k >= i; k-- {
		if isNL(rs[k]) {
			return k + 1
		}
	}
	// \s+(?!\S) : the run up to the end of text, or all but its last space.
	if end == n {
		return end
	}
	if end-1 > i {
		return end - 1
	}
	// \s+
	return end
}
