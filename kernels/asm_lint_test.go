package kernels

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAMD64AssemblyAvoidsSSETransitions checks dot_amd64.s for two rules
// whose breach costs no correctness, only speed, so no numeric test sees it:
//
//   - no legacy-SSE instruction (a mnemonic without the V prefix naming an
//     X register, such as MOVQ AX, X1 or MOVSS) while the upper halves of the
//     vector registers are dirty, i.e. after a Y/Z instruction and before
//     VZEROUPPER, and none inside a macro (macros are used in AVX loops);
//   - every function that touches Y or Z registers runs VZEROUPPER before
//     each RET, so the Go code after it (SSE scalar float) pays nothing.
//
// Measured on an Intel Xeon (Sapphire Rapids) VM: one legacy MOVQ AX, X1
// per block in the Q4_0/Q8_0 loops made them 50× slower (67 MB/s against
// 3.4 GB/s with VMOVQ); AMD Zen 4 showed no penalty, which is how it slipped in.
func TestAMD64AssemblyAvoidsSSETransitions(t *testing.T) {
	src, err := os.ReadFile("dot_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	xreg := regexp.MustCompile(`\bX([0-9]|1[0-5])\b`)
	macroBody := regexp.MustCompile(`^#define\s+\w+(\([^)]*\))?`)
	wide := regexp.MustCompile(`\b[YZ]([0-9]|[12][0-9]|3[01])\b`)
	legacy := func(ins string) bool {
		f := strings.Fields(ins)
		return len(f) > 0 && !strings.HasPrefix(f[0], "V") && xreg.MatchString(ins)
	}
	// A function's lines, checked when the next TEXT (or the end) comes:
	// loops jump back, so in a function that uses Y/Z registers anywhere
	// legacy SSE is allowed only after its VZEROUPPER (the epilogue).
	type insn struct {
		n    int
		text string
	}
	var fn string
	var body []insn
	check := func() {
		usesWide := false
		for _, in := range body {
			if strings.HasPrefix(in.text, "V") && wide.MatchString(in.text) {
				usesWide = true
			}
		}
		if !usesWide {
			return
		}
		clean := false
		for _, in := range body {
			switch {
			case strings.HasPrefix(in.text, "VZEROUPPER"):
				clean = true
			case strings.HasPrefix(in.text, "RET"):
				if !clean {
					t.Errorf("dot_amd64.s:%d: %s returns without VZEROUPPER", in.n, fn)
				}
			case !clean && legacy(in.text):
				t.Errorf("dot_amd64.s:%d: legacy SSE %q in a function using Y/Z registers", in.n, in.text)
			case strings.HasPrefix(in.text, "V") && wide.MatchString(in.text):
				clean = false
			}
		}
	}
	// Continued lines (a multi-line macro) are joined onto their first line,
	// and a call of a macro in a function stands for the macro's
	// instructions, so a body written once as a macro is checked where used.
	macros := map[string][]string{}
	call := regexp.MustCompile(`^(\w+)\(`)
	var expand func(n int, line string, depth int)
	expand = func(n int, line string, depth int) {
		if m := call.FindStringSubmatch(line); m != nil && depth < 4 {
			if ins, ok := macros[m[1]]; ok {
				for _, in := range ins {
					expand(n, in, depth+1)
				}
				return
			}
		}
		body = append(body, insn{n, line})
	}
	lines := strings.Split(string(src), "\n")
	for n := 0; n < len(lines); n++ {
		first, line := n, strings.TrimSpace(lines[n])
		for strings.HasSuffix(line, "\\") && n+1 < len(lines) {
			n++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[n])
		}
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "#define"):
			name := strings.Fields(strings.NewReplacer("(", " ").Replace(line))[1]
			for _, ins := range strings.Split(macroBody.ReplaceAllString(line, ""), ";") {
				if ins = strings.TrimSpace(ins); ins != "" {
					macros[name] = append(macros[name], ins)
				}
				// A call of another macro is checked in that macro's definition.
				if m := call.FindStringSubmatch(ins); m != nil && macros[m[1]] != nil {
					continue
				}
				if legacy(ins) {
					t.Errorf("dot_amd64.s:%d: legacy SSE %q in a macro", first+1, ins)
				}
			}
		case strings.HasPrefix(line, "TEXT"):
			check()
			fn, body = line, nil
		default:
			expand(first+1, line, 0)
		}
	}
	check()
}
