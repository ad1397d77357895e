package manifests

import (
	"math"
	"regexp"
	"strings"
)

// BLEU is corpus BLEU-4 as sacreBLEU computes it by default: 13a
// tokenisation, clipped n-gram precisions summed over the corpus, exponential
// smoothing of zero counts (the n-th zero precision becomes 1/(2^n·total)),
// geometric mean and brevity penalty exp(1 − r/h) when h ≤ r.
type BLEU struct {
	Score      float64    // 0..100
	Precisions [4]float64 // percent
	HypLen     int
	RefLen     int
}

var tok13a = []struct {
	re  *regexp.Regexp
	rep string
}{
	{regexp.MustCompile(`([\{-\~\[-\x60 -\&\(-\+\:-\@\/])`), " $1 "},
	{regexp.MustCompile(`([^0-9])([\.,])`), "$1 $2 "},
	{regexp.MustCompile(`([\.,])([^0-9])`), " $1 $2"},
	{regexp.MustCompile(`([0-9])(-)`), "$1 $2 "},
}

// Tokenize13a splits a line as sacreBLEU's default "13a" tokenizer (the
// mteval-v13a rules) does.
func Tokenize13a(line string) []string {
	line = strings.ReplaceAll(line, "<skipped>", "")
	line = strings.ReplaceAll(line, "-\n", "")
	line = strings.ReplaceAll(line, "\n", " ")
	if strings.Contains(line, "&") {
		line = strings.NewReplacer("&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(line)
	}
	line = " " + line + " "
	for _, r := range tok13a {
		line = r.re.ReplaceAllString(line, r.rep)
	}
	return strings.Fields(line)
}

func ngrams(toks []string, n int) map[string]int {
	m := map[string]int{}
	for i := 0; i+n <= len(toks); i++ {
		m[strings.Join(toks[i:i+n], "\x00")]++
	}
	return m
}

// BLEUStats are the sufficient statistics of corpus BLEU: clipped n-gram
// matches and n-gram counts of the hypotheses, and both sides' lengths.
// A corpus's are the sum of its sentences'.
type BLEUStats struct {
	Match, Total   [4]int
	HypLen, RefLen int
}

// SentenceStats are one hypothesis's statistics against its reference.
func SentenceStats(hyp, ref string) BLEUStats {
	var s BLEUStats
	h, r := Tokenize13a(hyp), Tokenize13a(ref)
	s.HypLen, s.RefLen = len(h), len(r)
	for n := 1; n <= 4; n++ {
		rc := ngrams(r, n)
		for g, c := range ngrams(h, n) {
			s.Match[n-1] += min(c, rc[g])
		}
		s.Total[n-1] = max(0, len(h)-n+1)
	}
	return s
}

// Add adds o's statistics to s.
func (s *BLEUStats) Add(o BLEUStats) {
	for n := range 4 {
		s.Match[n] += o.Match[n]
		s.Total[n] += o.Total[n]
	}
	s.HypLen += o.HypLen
	s.RefLen += o.RefLen
}

// CorpusBLEU scores hypotheses against one reference each.
func CorpusBLEU(hyps, refs []string) BLEU {
	var s BLEUStats
	for i := range hyps {
		s.Add(SentenceStats(hyps[i], refs[i]))
	}
	return s.BLEU()
}

// BLEU is the corpus score of the statistics.
func (s BLEUStats) BLEU() BLEU {
	b := BLEU{HypLen: s.HypLen, RefLen: s.RefLen}
	smooth := 1.0
	logSum := 0.0
	for n := 0; n < 4; n++ {
		switch {
		case s.Total[n] == 0:
			b.Precisions[n] = 0
		case s.Match[n] == 0:
			smooth *= 2
			b.Precisions[n] = 100 / (smooth * float64(s.Total[n]))
		default:
			b.Precisions[n] = 100 * float64(s.Match[n]) / float64(s.Total[n])
		}
		if b.Precisions[n] <= 0 {
			return b
		}
		logSum += math.Log(b.Precisions[n])
	}
	bp := 1.0
	if b.HypLen <= b.RefLen {
		if b.HypLen == 0 {
			return b
		}
		bp = math.Exp(1 - float64(b.RefLen)/float64(b.HypLen))
	}
	b.Score = bp * math.Exp(logSum/4)
	return b
}

// NormalizeAnswer lowercases, trims spaces and surrounding periods, and
// collapses whitespace: the QA comparison rule of the tiny model's reference.
func NormalizeAnswer(s string) string {
	return strings.Join(strings.Fields(strings.Trim(strings.TrimSpace(strings.ToLower(s)), ".")), " ")
}

// ExactMatch is 1 when the normalised answers are equal.
func ExactMatch(hyp, ref string) float64 {
	if NormalizeAnswer(hyp) == NormalizeAnswer(ref) {
		return 1
	}
	return 0
}

// TokenF1 is the harmonic mean of token precision and recall between the
// normalised answers (bags of words, as in SQuAD).
func TokenF1(hyp, ref string) float64 {
	h, r := strings.Fields(NormalizeAnswer(hyp)), strings.Fields(NormalizeAnswer(ref))
	if len(h) == 0 || len(r) == 0 {
		if len(h) == len(r) {
			return 1
		}
		return 0
	}
	rc := map[string]int{}
	for _, w := range r {
		rc[w]++
	}
	common := 0
	for _, w := range h {
		if rc[w] > 0 {
			common++
			rc[w]--
		}
	}
	if common == 0 {
		return 0
	}
	p, rec := float64(common)/float64(len(h)), float64(common)/float64(len(r))
	return 2 * p * rec / (p + rec)
}

// RougeL is the ROUGE-L F-measure (β = 1): from the longest common
// subsequence of lowercased whitespace tokens, P = LCS/|hyp|, R = LCS/|ref|.
func RougeL(hyp, ref string) float64 {
	h, r := strings.Fields(strings.ToLower(hyp)), strings.Fields(strings.ToLower(ref))
	if len(h) == 0 || len(r) == 0 {
		return 0
	}
	prev, cur := make([]int, len(r)+1), make([]int, len(r)+1)
	for i := 1; i <= len(h); i++ {
		for j := 1; j <= len(r); j++ {
			if h[i-1] == r[j-1] {
				cur[j] = prev[j-1] + 1
			} else {
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	lcs := prev[len(r)]
	if lcs == 0 {
		return 0
	}
	p, rec := float64(lcs)/float64(len(h)), float64(lcs)/float64(len(r))
	return 2 * p * rec / (p + rec)
}
