package cliutil

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Intersperse lets flags follow positional arguments, as users of llama.cpp
// expect ("sipack convert DIR -o x.sip"): urfave/cli v2 stops parsing flags at
// the first positional argument, so the arguments of the chosen subcommand
// are reordered, flags (with their values) first. "--" ends reordering.
func Intersperse(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	// Find the subcommand (the first non-flag argument), skipping global flags.
	ci := -1
	var cmd *cli.Command
	for i := 1; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			cmd = findCommand(app.Commands, args[i])
			ci = i
			break
		}
	}
	var flags []cli.Flag
	start := 1
	if cmd != nil {
		flags, start = cmd.Flags, ci+1
		for len(cmd.Subcommands) > 0 && start < len(args) {
			sub := findCommand(cmd.Subcommands, args[start])
			if sub == nil {
				break
			}
			cmd, flags, start = sub, sub.Flags, start+1
		}
	} else {
		flags = app.Flags
	}
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var fl, pos []string
	rest := args[start:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i:]...)
			break
		}
		if len(a) > 1 && strings.HasPrefix(a, "-") {
			name := strings.TrimLeft(a, "-")
			fl = append(fl, a)
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				fl = append(fl, rest[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out := append([]string{}, args[:start]...)
	out = append(out, fl...)
	return append(out, pos...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
