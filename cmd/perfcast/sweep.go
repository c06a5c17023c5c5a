package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/whatif"
)

func newSweepCmd() *cobra.Command {
	var f solveFlags
	var varies []string
	cmd := &cobra.Command{
		Use:   "sweep MODEL --vary KEY=FROM..TO[:STEP]",
		Short: "Solve a model at each value of one or more keys",
		Long: `Solve a model at each value of a range, e.g. --vary workload.*.load=1..4:0.5
or --vary hosts.app.cpu.cores=1..8. Several --vary flags make a grid. Points are
solved in parallel; the result is one line per point, or with --json
{"points": [{"set": {...}, "result": RESULT}, ...]}.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(varies) == 0 {
				return usagef("sweep needs --vary KEY=FROM..TO[:STEP]")
			}
			var vs []whatif.Vary
			for _, s := range varies {
				v, err := whatif.ParseVary(s)
				if err != nil {
					return usageError{err}
				}
				vs = append(vs, v)
			}
			m, err := f.loadModel(a[0])
			if err != nil {
				return err
			}
			if _, err := f.options(); err != nil {
				return err
			}
			// Points run side by side; each simulation then uses one worker,
			// which leaves its result unchanged.
			pf := f
			pf.workers = 1
			points, err := whatif.Sweep(cmd.Context(), m, vs, f.workers, func(ctx context.Context, pm *model.Model) (*solve.Result, error) {
				return solveModel(ctx, pm, &pf)
			})
			if err != nil {
				return err
			}
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Points []whatif.Point `json:"points"`
				}{points})
			}
			return writeSweep(cmd.OutOrStdout(), vs, points)
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&varies, "vary", nil, "a key and its range, `KEY=FROM..TO[:STEP]`; repeat for a grid")
	return cmd
}

// writeSweep prints one line per point: the varied values, each workload's
// throughput and mean response time, and the bottleneck.
func writeSweep(w io.Writer, vs []whatif.Vary, points []whatif.Point) error {
	if len(points) == 0 {
		return nil
	}
	var wls []string
	for name := range points[0].Result.Workloads {
		wls = append(wls, name)
	}
	sort.Strings(wls)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t", v.Key)
	}
	for _, name := range wls {
		fmt.Fprintf(tw, "%s X\t%s MEAN\t", name, name)
	}
	fmt.Fprintln(tw, "BOTTLENECK\tUTIL\tSTABLE")
	for _, p := range points {
		for _, v := range vs {
			fmt.Fprintf(tw, "%s\t", whatif.FormatValue(p.Set[v.Key]))
		}
		r := p.Result
		for _, name := range wls {
			wr := r.Workloads[name]
			switch {
			case wr != nil && r.Stable && wr.Throughput == 0 && wr.ResponseTime.Mean == 0:
				fmt.Fprint(tw, "0/s\t-\t") // no request: no response time
			case wr != nil && r.Stable:
				fmt.Fprintf(tw, "%.4g/s\t%s\t", wr.Throughput, textout.Duration(wr.ResponseTime.Mean))
			default:
				fmt.Fprint(tw, "-\t-\t")
			}
		}
		util := "-"
		if res := r.Resources[r.Bottleneck]; res != nil {
			util = fmt.Sprintf("%.1f%%", res.Utilization*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\n", dash(r.Bottleneck), util, r.Stable)
	}
	return tw.Flush()
}
