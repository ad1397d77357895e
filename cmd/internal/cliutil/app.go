package cliutil

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// version is set by the Makefile's build (-ldflags -X): git describe.
var version string

// Version is the tools' version: the build's, else the module's or the VCS
// revision the binary was built from.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "(devel)" {
		v = ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if v == "" && rev != "" {
		return "devel " + rev[:min(12, len(rev))] + dirty
	}
	if v == "" {
		return "devel"
	}
	return v
}

// Setup gives an app the habits of the tools this project's users know:
// --version, a bad flag or command answered in one line with a hint
// instead of the whole help, and booleans listed without "(default: false)".
func Setup(app *cli.App) {
	app.Version = Version()
	app.OnUsageError = usageError(app.Name, "")
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			c.OnUsageError = usageError(app.Name, prefix+c.Name+" ")
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
	cli.FlagStringer = flagString
	app.CommandNotFound = func(c *cli.Context, name string) {
		msg := fmt.Sprintf("%s: error: unknown command %q", app.Name, name)
		best, score := "", 0.0
		for _, cmd := range app.Commands {
			for _, n := range cmd.Names() {
				if s := smetrics.JaroWinkler(name, n, 0.7, 4); s > score {
					best, score = cmd.Name, s
				}
			}
		}
		if score >= 0.8 {
			msg += "; did you mean " + best + "?"
		}
		fmt.Fprintf(os.Stderr, "%s (see %s --help)\n", msg, app.Name)
		os.Exit(1)
	}
}

// usageError turns a flag parser's error into one line: what was wrong,
// the nearest flag the command has, and where its help is.
func usageError(app, cmd string) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			msg = "unknown flag " + typed(name)
			flags := c.App.Flags
			if c.Command != nil && len(c.Command.Flags) > 0 {
				flags = c.Command.Flags
			}
			want := strings.TrimLeft(name, "-")
			if s := cli.SuggestFlag; s != nil {
				// urfave suggests its nearest flag however far: only a near one helps.
				near := s(flags, want, false)
				if near != "" && smetrics.JaroWinkler(want, strings.TrimLeft(near, "-"), 0.7, 4) >= 0.8 {
					msg += "; did you mean " + near + "?"
				}
			}
		}
		return fmt.Errorf("%s (see %s %s--help)", msg, app, cmd)
	}
}

// typed is a flag the parser names -name as the command line spelled it
// (--name, most often).
func typed(name string) string {
	bare := strings.TrimLeft(name, "-")
	for _, a := range os.Args[1:] {
		if a, _, _ = strings.Cut(a, "="); strings.HasPrefix(a, "-") && strings.TrimLeft(a, "-") == bare {
			return a
		}
	}
	return name
}

// defaultFlagString is urfave's own rendering, which flagString trims.
var defaultFlagString = cli.FlagStringer

// flagString is urfave's flag line without a boolean's "(default: false)".
func flagString(f cli.Flag) string {
	return strings.TrimSuffix(defaultFlagString(f), " (default: false)")
}
