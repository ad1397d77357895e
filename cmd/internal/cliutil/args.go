package cliutil

import (
	"errors"
	"reflect"
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

// RequireFlags takes over urfave/cli's check of required flags in cmds and
// their subcommands: its message (`Required flag "output" not set`, after
// the whole help) names neither the short form nor what the flag is for,
// where this one says "missing -o/--output (output pack FILE)". Each
// required flag is made optional and checked by the command's Before.
func RequireFlags(cmds []*cli.Command) {
	for _, c := range cmds {
		var req []cli.Flag
		for _, f := range c.Flags {
			if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() && unrequire(f) {
				req = append(req, f)
			}
		}
		if len(req) > 0 {
			before := c.Before
			c.Before = func(ctx *cli.Context) error {
				var missing []string
				for _, f := range req {
					if !isSet(ctx, f) {
						missing = append(missing, missingFlag(f))
					}
				}
				if len(missing) > 0 {
					return errors.New(strings.Join(missing, "; "))
				}
				if before != nil {
					return before(ctx)
				}
				return nil
			}
		}
		RequireFlags(c.Subcommands)
	}
}

// unrequire clears a flag's Required field (every urfave/cli flag type has
// one) and reports whether it could.
func unrequire(f cli.Flag) bool {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	r := v.Elem().FieldByName("Required")
	if !r.IsValid() || r.Kind() != reflect.Bool || !r.CanSet() {
		return false
	}
	r.SetBool(false)
	return true
}

func isSet(ctx *cli.Context, f cli.Flag) bool {
	for _, n := range f.Names() {
		if ctx.IsSet(strings.TrimSpace(n)) {
			return true
		}
	}
	return false
}

// missingFlag says which flag is missing, by all its names, and what it is
// (its usage with the placeholder's quotes dropped).
func missingFlag(f cli.Flag) string {
	var names []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			names = append([]string{"-" + n}, names...)
		} else {
			names = append(names, "--"+n)
		}
	}
	s := "missing " + strings.Join(names, "/")
	if d, ok := f.(cli.DocGenerationFlag); ok && d.GetUsage() != "" {
		s += " (" + strings.ReplaceAll(d.GetUsage(), "`", "") + ")"
	}
	return s
}
