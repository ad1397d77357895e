package kernels

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAMD64AssemblyAvoidsSSETransitions checks every *_amd64.s file, and
// each header it includes from this directory, for two rules whose breach
// costs no correctness, only speed, so no numeric test sees it:
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
	files, err := filepath.Glob("*_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no *_amd64.s files")
	}
	for _, f := range files {
		if n := lintAMD64(t, f); n == 0 {
			t.Errorf("%s: no TEXT symbols found", f)
		}
	}
}

// asmLine is one logical line of assembly: continuation lines joined, the
// comment cut, with the file and line it started at.
type asmLine struct {
	pos  string
	text string
}

// readAsm reads name as the assembler sees it: the lines of a header
// included from this directory stand in place of its #include (the
// toolchain's textflag.h is not here and holds only constants).
func readAsm(name string, seen map[string]bool) ([]asmLine, error) {
	if seen[name] {
		return nil, nil
	}
	seen[name] = true
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	include := regexp.MustCompile(`^#include\s+"([^"]+)"`)
	var out []asmLine
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
		if m := include.FindStringSubmatch(line); m != nil {
			if m[1] == "textflag.h" {
				continue
			}
			inc, err := readAsm(m[1], seen)
			if err != nil {
				return nil, err
			}
			out = append(out, inc...)
			continue
		}
		if line != "" {
			out = append(out, asmLine{name + ":" + strconv.Itoa(first+1), line})
		}
	}
	return out, nil
}

// splitArgs splits a macro call's argument list at the commas outside
// parentheses.
func splitArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(args, strings.TrimSpace(s[start:]))
}

// lintAMD64 checks one assembly file and returns how many functions it saw.
func lintAMD64(t *testing.T, file string) int {
	lines, err := readAsm(file, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	xreg := regexp.MustCompile(`\bX([0-9]|1[0-5])\b`)
	wide := regexp.MustCompile(`\b[YZ]([0-9]|[12][0-9]|3[01])\b`)
	legacy := func(ins string) bool {
		f := strings.Fields(ins)
		return len(f) > 0 && !strings.HasPrefix(f[0], "V") && xreg.MatchString(ins)
	}
	// A function's lines, checked when the next TEXT (or the end) comes:
	// loops jump back, so in a function that uses Y/Z registers anywhere
	// legacy SSE is allowed only after its VZEROUPPER (the epilogue).
	type insn struct {
		pos  string
		text string
	}
	var fn string
	var body []insn
	funcs := 0
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
					t.Errorf("%s: %s returns without VZEROUPPER", in.pos, fn)
				}
			case !clean && legacy(in.text):
				t.Errorf("%s: legacy SSE %q in a function using Y/Z registers", in.pos, in.text)
			case strings.HasPrefix(in.text, "V") && wide.MatchString(in.text):
				clean = false
			}
		}
	}
	// A call of a macro in a function stands for the macro's instructions
	// with its arguments put in for its parameters (nested calls expanded
	// the same way, a macro name passed as an argument included), so a body
	// written once as a macro is checked where used, with the registers it
	// is given. A macro's own lines are checked where it is defined, and
	// again after substitution, so an argument cannot bring in legacy SSE.
	type macro struct {
		params []string
		body   []string
	}
	macros := map[string]macro{}
	define := regexp.MustCompile(`^#define\s+(\w+)(\(([^)]*)\))?\s*(.*)$`)
	call := regexp.MustCompile(`^(\w+)(\((.*)\))?$`)
	var expand func(pos, line string, depth int, inMacro string)
	expand = func(pos, line string, depth int, inMacro string) {
		if m := call.FindStringSubmatch(line); m != nil && depth < 8 {
			if mac, ok := macros[m[1]]; ok {
				var args []string
				if m[2] != "" {
					args = splitArgs(m[3])
				}
				if len(args) != len(mac.params) {
					t.Errorf("%s: %s takes %d arguments, given %d", pos, m[1], len(mac.params), len(args))
					return
				}
				for _, ins := range mac.body {
					for i, p := range mac.params {
						ins = regexp.MustCompile(`\b`+regexp.QuoteMeta(p)+`\b`).ReplaceAllLiteralString(ins, args[i])
					}
					expand(pos, ins, depth+1, m[1])
				}
				return
			}
		}
		if strings.HasPrefix(line, "DATA") || strings.HasPrefix(line, "GLOBL") {
			return
		}
		if strings.Contains(strings.Fields(line)[0], "(") {
			t.Errorf("%s: %q calls no macro defined before it", pos, line)
		}
		if inMacro != "" && legacy(line) {
			t.Errorf("%s: legacy SSE %q from macro %s", pos, line, inMacro)
		}
		body = append(body, insn{pos, line})
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l.text, "#define"):
			m := define.FindStringSubmatch(l.text)
			if m == nil {
				t.Errorf("%s: cannot parse %q", l.pos, l.text)
				continue
			}
			var mac macro
			if m[2] != "" && strings.TrimSpace(m[3]) != "" {
				mac.params = splitArgs(m[3])
			}
			for _, ins := range strings.Split(m[4], ";") {
				if ins = strings.TrimSpace(ins); ins == "" {
					continue
				}
				mac.body = append(mac.body, ins)
				// A call of another macro is checked in that macro's definition.
				if c := call.FindStringSubmatch(ins); c != nil {
					if _, ok := macros[c[1]]; ok {
						continue
					}
				}
				if legacy(ins) {
					t.Errorf("%s: legacy SSE %q in macro %s", l.pos, ins, m[1])
				}
			}
			macros[m[1]] = mac
		case strings.HasPrefix(l.text, "#"):
			t.Errorf("%s: unexpected directive %q", l.pos, l.text)
		case strings.HasPrefix(l.text, "TEXT"):
			check()
			fn, body = l.text, nil
			funcs++
		default:
			expand(l.pos, l.text, 0, "")
		}
	}
	check()
	return funcs
}
