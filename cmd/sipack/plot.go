package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/bench"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/cmd/internal/plots"
	"github.com/sipack/sipack/internal/tmpfile"
)

var plotCmd = &cli.Command{
	Name:  "plot",
	Usage: "draw PNGs of measurements (sirun runs on devices and draws nothing)",
	Subcommands: []*cli.Command{{
		Name:      "bench",
		Usage:     "draw decode tok/s against φ with the bandwidth bound, from `sirun bench --json` lines",
		ArgsUsage: "REPORT.jsonl [...]",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "PNG `FILE`"}},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return fmt.Errorf("plot bench needs at least one file of sirun bench --json lines")
			}
			// The PNG is replaced by a rename whatever its mode bits (force).
			if err := cliutil.CheckOutput(c.String("output"), true, c.Args().Slice()...); err != nil {
				return err
			}
			cliutil.RemoveStaleTemps(os.Stderr, "sipack", c.String("output"))
			var series []plots.Series
			for _, f := range c.Args().Slice() {
				reports, err := readBenchReports(f)
				if err != nil {
					return err
				}
				for _, r := range reports {
					s := plots.Series{Name: filepath.Base(r.Pack), Bound: r.BandwidthGBs * 1e9}
					for _, g := range r.Grid {
						s.Points = append(s.Points, plots.BenchPoint{Gamma: g.Gamma, Phi: g.Phi, TokS: g.TokS, Bytes: g.BytesPerToken})
					}
					series = append(series, s)
				}
			}
			if err := plots.BenchTokS(c.String("output"), series); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", c.String("output"))
			return nil
		},
	}},
}

// readBenchReports reads one bench.Report per non-empty line of path.
func readBenchReports(path string) ([]*bench.Report, error) {
	f, err := tmpfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*bench.Report
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		r := &bench.Report{}
		if err := json.Unmarshal(sc.Bytes(), r); err != nil {
			return nil, fmt.Errorf("%s:%d: not a sirun bench --json line: %w", path, line, err)
		}
		if r.Pack == "" || len(r.Grid) == 0 {
			return nil, fmt.Errorf("%s:%d: not a sirun bench --json line (no pack or no grid)", path, line)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no reports", path)
	}
	return out, nil
}
