package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/report"
	"github.com/perfcast/perfcast/solve"
)

func newReportCmd(g *globalFlags) *cobra.Command {
	var (
		f                solveFlags
		out, resultsPath string
		points           int
	)
	cmd := &cobra.Command{
		Use:   "report MODEL [--results F] -o FILE.html",
		Short: "Write the report of a model: one self-contained HTML page",
		Long: `Write the human report of a model as one self-contained HTML page: a summary
in plain words (the bottleneck, the load it saturates at, the headroom), the
architecture with its call rates, response time and utilization against load,
and tables of workloads, resources and operations.

With --results, the report shows those results: the results.json of perfcast
analyze (with measurements, extraction evidence and the load sweep) or the
JSON of perfcast predict. Without it, the model is solved at its load
(simulated by default, for percentiles) and at growing loads up to where its
bottleneck saturates, as perfcast analyze does: unless --solver is given, by
mean-value analysis when the model is within its reach at every load, and by
simulation otherwise.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if out == "" {
				return usagef("report needs -o FILE.html (or -o - for standard output)")
			}
			if err := outputDir(out); err != nil {
				return err
			}
			if points < 2 {
				return usagef("--points must be at least 2, not %d", points)
			}
			if _, err := f.options(); err != nil {
				return err
			}
			m, err := f.loadModel(a[0])
			if err != nil {
				return err
			}
			var res *report.Results
			if resultsPath != "" {
				if res, err = readResults(cmd, resultsPath, m); err != nil {
					return err
				}
			} else {
				prog := newProgress(cmd.ErrOrStderr(), g.quiet)
				res, err = report.Analyze(cmd.Context(), m, analyzeOptions(cmd, &f, prog, points, nil, nil))
				prog.close()
				if err != nil {
					return fmt.Errorf("%s: %w", a[0], err)
				}
			}
			if out == "-" {
				return report.Write(cmd.OutOrStdout(), m, res)
			}
			return writeHTML(out, m, res)
		},
	}
	f.register(cmd)
	f.solver = "sim"
	cmd.Flags().Lookup("solver").DefValue = "sim"
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the report to this `file` (- for standard output)")
	cmd.Flags().StringVar(&resultsPath, "results", "", "show these results (`file`: results.json of analyze, or predict --json) instead of solving")
	cmd.Flags().IntVar(&points, "points", report.DefaultPoints, "load levels of the sweep, from the model's load to near saturation")
	return cmd
}

// readResults reads the results.json of analyze, or a result of predict
// --json, for model m.
func readResults(cmd *cobra.Command, path string, m *model.Model) (*report.Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a results file: %w", path, err)
	}
	if _, ok := probe["predicted"]; ok {
		var r report.Results
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Predicted == nil {
			return nil, fmt.Errorf("%s: \"predicted\" is empty", path)
		}
		if r.Model != m.Name {
			return nil, fmt.Errorf("%s: results of model %q, not of %q", path, r.Model, m.Name)
		}
		if r.Operations == nil {
			r.Operations = map[string]report.OperationLoad{}
		}
		return &r, nil
	}
	if _, ok := probe["solver"]; !ok {
		return nil, fmt.Errorf("%s: neither the results.json of perfcast analyze nor a result of perfcast predict --json", path)
	}
	var pred solve.Result
	if err := json.Unmarshal(data, &pred); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if pred.Model != m.Name {
		return nil, fmt.Errorf("%s: result of model %q, not of %q", path, pred.Model, m.Name)
	}
	given := func(context.Context, *model.Model) (*solve.Result, error) { return &pred, nil }
	return report.Analyze(cmd.Context(), m, report.Options{Solve: given, Points: -1})
}
