package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/whatif"
)

func newCapacityCmd() *cobra.Command {
	var f solveFlags
	var sloTexts []string
	var vary string
	cmd := &cobra.Command{
		Use:   "capacity MODEL --slo EXPR --vary KEY=FROM..TO",
		Short: "Find the largest load, or the fewest resources, that keep the SLOs",
		Long: `Find the largest load (when --vary names ...open.rate, ...closed.users or
workload.*.load) or the fewest resources (cores, replicas, threads, capacity,
speed) within the range that keep every SLO:

  --slo 'mean(X) < D'   --slo 'p95(X) < D'   --slo 'util(RESOURCE) < F'

X is a workload or component/operation. The search uses the analytical solver
where the model is within its reach and the SLOs are means or utilizations,
then confirms the answer by simulation; percentile SLOs are searched by
simulation. Whole-number keys are searched over whole numbers, others to
four significant digits when simulated (finer would be the simulation's
noise) and seven when solved analytically.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(sloTexts) == 0 || vary == "" {
				return usagef("capacity needs --slo and --vary")
			}
			var slos []whatif.SLO
			percentiles := false
			for _, s := range sloTexts {
				slo, err := whatif.ParseSLO(s)
				if err != nil {
					return usageError{err}
				}
				percentiles = percentiles || slo.NeedsPercentiles()
				slos = append(slos, slo)
			}
			v, err := whatif.ParseVary(vary)
			if err != nil {
				return usageError{err}
			}
			m, err := f.loadModel(a[0])
			if err != nil {
				return err
			}
			search := f
			if percentiles && search.solver != "sim" {
				search.solver = "sim"
			}
			c, err := whatif.FindCapacity(cmd.Context(), m, v, slos, func(ctx context.Context, pm *model.Model) (*solve.Result, error) {
				return solveModel(ctx, pm, &search)
			})
			if err != nil {
				return err
			}
			out := map[string]any{
				"binding":     c.Binding.Text,
				"bottleneck":  c.Result.Bottleneck,
				"evaluations": c.Evaluations,
			}
			if !math.IsInf(c.BindingValue, 0) {
				out["binding_value"] = c.BindingValue
			}
			if !c.Found {
				// Where the SLOs come closest to holding, and what breaks there.
				out["none"] = true
				out["at"] = map[string]float64{v.Key: c.Value}
				out["result"] = c.Result
			} else {
				dir := "min"
				if whatif.LoadKey(v.Key) {
					dir = "max"
				}
				out[dir] = map[string]float64{v.Key: c.Value}
				if c.Result.Solver == "mva" && f.solver != "mva" {
					// Confirm by simulation.
					pm, err := whatif.Apply(m, map[string]float64{v.Key: c.Value}, []string{v.Key})
					if err != nil {
						return err
					}
					confirm := f
					confirm.solver = "sim"
					sr, err := solveModel(cmd.Context(), pm, &confirm)
					if err != nil {
						return err
					}
					for _, s := range slos {
						val, ok, err := s.Check(sr)
						if err == nil && !ok {
							c.Result.Warnings = append(c.Result.Warnings, fmt.Sprintf("simulation at the answer does not confirm %s (simulated %.4g)", s.Text, val))
						}
					}
					out["confirmed_by"] = "sim"
				}
				out["result"] = c.Result
			}
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			w := cmd.OutOrStdout()
			if !c.Found {
				fmt.Fprintf(w, "no value of %s in [%g, %g] keeps every SLO\nat %s, where they come closest: %s is %s; bottleneck: %s (%s)\n\n",
					v.Key, v.Values[0], v.Values[len(v.Values)-1], whatif.FormatValue(c.Value), c.Binding.Text, c.Binding.Format(c.BindingValue), dash(c.Result.Bottleneck), textout.Plural(c.Evaluations, "model")+" solved")
				return solve.WriteText(w, c.Result)
			}
			word, beyond, end := "fewest", "smaller", v.Values[0]
			if whatif.LoadKey(v.Key) {
				word, beyond, end = "largest", "larger", v.Values[len(v.Values)-1]
			}
			fmt.Fprintf(w, "%s %s keeping the SLOs: %s\n", word, v.Key, whatif.FormatValue(c.Value))
			if c.Value == end {
				fmt.Fprintf(w, "the whole range keeps them: a wider range may find a %s value\n", beyond)
			}
			fmt.Fprintf(w, "binding: %s (%s there); bottleneck: %s (%s)\n\n",
				c.Binding.Text, c.Binding.Format(c.BindingValue), dash(c.Result.Bottleneck), textout.Plural(c.Evaluations, "model")+" solved")
			return solve.WriteText(w, c.Result)
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&sloTexts, "slo", nil, "an objective, `EXPR` such as 'p95(checkout) < 200ms'; repeatable, all must hold")
	cmd.Flags().StringVar(&vary, "vary", "", "the key to search and its range, `KEY=FROM..TO`")
	return cmd
}
