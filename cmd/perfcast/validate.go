package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/metrics"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/trace"
	"github.com/perfcast/perfcast/validate"
)

func newValidateCmd() *cobra.Command {
	var (
		f           solveFlags
		traces      []string
		metricFiles []string
		configPath  string
		calibrate   bool
		out         string
		quartiles   int64
		window      windowFlags
	)
	cmd := &cobra.Command{
		Use:   "validate MODEL --traces TRACES... [--calibrate -o CALIBRATED]",
		Short: "Compare a model's predictions with what traces measured; calibrate it",
		Long: `Predict the workload seen in the traces and compare the prediction with what
the traces measured.

Each model workload stands for the requests that entered at the operation of
its first call (leading delay steps are skipped); open workloads are solved at
the measured arrival rate, closed ones keep their users. Workloads without
matching traces are left out, and traces whose entry operation no workload
has are not compared; warnings say which.

For every workload, operation and host CPU (from --metrics when they cover the
host's machines, else when spans carry perfcast.cpu.time)
the table shows the measured and predicted throughput, mean, percentiles and
interquartile range of the response time, and utilization; the relative error
(predicted - measured) / measured; and the noise, the 95 % half-width of the
error that sampling alone explains. Errors beyond their noise are marked *.
A summary gives the absolute prediction errors RTPE (mean response time), TPE
(throughput) and CPUPE (CPU utilization), with their mean, median and maximum.
With --json: {"measured": RESULT, "predicted": RESULT, "errors": {...},
"noise": {...}, "summary": {...}, "warnings": [...]}, errors at the same paths
as the results' figures (errors.workloads.NAME.response_time.mean).

With --calibrate, the model is fitted to the measurement: CPU demands on each
host are multiplied by measured / predicted utilization (within 0.5 to 2),
and each workload whose measured mean response time exceeds the prediction
by more than the noise gets a fixed delay before its first call. The
calibrated model, whose description says what changed, is written to -o and
validated again.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			paths := append(append([]string{}, traces...), a[1:]...)
			if len(paths) == 0 {
				return usagef("validate needs --traces TRACES: the traces to compare with")
			}
			if calibrate && out == "" {
				return usagef("--calibrate needs -o CALIBRATED: where to write the calibrated model")
			}
			if !calibrate && out != "" {
				return usagef("-o writes the calibrated model: give --calibrate too")
			}
			if calibrate {
				if err := outputDir(out); err != nil {
					return err
				}
			}
			if quartiles < -1 {
				return usagef("--quartile-requests must be -1, 0 or positive, not %d", quartiles)
			}
			if _, err := f.options(); err != nil {
				return err
			}
			cfg, err := extractConfig(configPath, nil)
			if err != nil {
				return err
			}
			if err := window.apply(cfg); err != nil {
				return err
			}
			m, err := f.loadModel(a[0])
			if err != nil {
				return err
			}
			st, err := readState(cmd.Context(), paths, cfg)
			if err != nil {
				return err
			}
			if quartiles == -1 {
				quartiles = st.Traces
			}
			solveFn := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
				res, err := solveModel(ctx, m, &f)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", a[0], err)
				}
				if res.Sim != nil && quartiles > 0 {
					if err := validate.AddSimulatedQuartiles(ctx, m, res, f.seed, quartiles); err != nil {
						return nil, fmt.Errorf("%s: %w", a[0], err)
					}
				}
				return res, nil
			}
			var opts validate.Options
			if len(metricFiles) > 0 {
				if opts.Metrics, err = metrics.Read(metricFiles); err != nil {
					return fmt.Errorf("read metrics: %w", err)
				}
			}
			rep, err := validate.ValidateWith(cmd.Context(), m, st, solveFn, opts)
			if err != nil {
				return err
			}
			var (
				cal      *validate.Calibration
				calRep   *validate.Report
				calModel *model.Model
			)
			if calibrate {
				calModel, cal, err = validate.Calibrate(cmd.Context(), m, rep, st, solveFn)
				if err != nil {
					return err
				}
				if calRep, err = validate.ValidateWith(cmd.Context(), calModel, st, solveFn, opts); err != nil {
					return fmt.Errorf("validate the calibrated model: %w", err)
				}
				if err := writeModel(cmd.OutOrStdout(), out, calModel); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			if out == "-" {
				// The calibrated model went to standard output.
				w = cmd.ErrOrStderr()
			}
			if f.json {
				return writeValidationJSON(w, rep, cal, calRep)
			}
			if err := validate.WriteText(w, rep); err != nil {
				return err
			}
			if cal != nil {
				if err := validate.WriteCalibration(w, cal, out); err != nil {
					return err
				}
				fmt.Fprintf(w, "\nafter calibration:")
				if err := validate.WriteErrorTable(w, calRep); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringSliceVar(&traces, "traces", nil, "trace `files` or directories to compare with (any format extract reads; - for standard input); repeatable, comma-separated, or as further arguments")
	cmd.Flags().StringArrayVar(&metricFiles, "metrics", nil, "CPU utilization metrics `file` (CSV, Prometheus or OTLP JSON, as extract reads); they measure the hosts they cover in place of the spans' CPU times; repeatable")
	cmd.Flags().StringVar(&configPath, "config", "", "extraction configuration `file`, as given to extract, so that traces name components and operations as the model does")
	cmd.Flags().BoolVar(&calibrate, "calibrate", false, "fit CPU overhead factors and entry delays to the traces and write the calibrated model to -o")
	cmd.Flags().StringVarP(&out, "output", "o", "", "with --calibrate, write the calibrated model to this `file` (- for standard output)")
	cmd.Flags().Int64Var(&quartiles, "quartile-requests", -1, "when simulating, record this many requests to predict the response-time quartiles (interquartile range); -1: as many as the traces hold; 0: no IQR")
	window.register(cmd)
	return cmd
}

// readState folds the traces into an extraction state.
func readState(ctx context.Context, paths []string, cfg *extract.Config) (*extract.State, error) {
	r, err := ingest.Open(paths, ingest.Options{})
	if err != nil {
		return nil, fmt.Errorf("read traces: %w", err)
	}
	defer r.Close()
	st := extract.NewState()
	if _, err := trace.Run(ctx, r, trace.Options{}, func(t *trace.Tree) error {
		st.Fold(t, cfg)
		return nil
	}); err != nil {
		return nil, err
	}
	if st.Traces == 0 {
		return nil, fmt.Errorf("no complete trace in %v", paths)
	}
	return st, nil
}

// validationJSON is the output of validate --json.
type validationJSON struct {
	*validate.Report
	Calibration *validate.Calibration `json:"calibration,omitempty"`
	Calibrated  *validate.Report      `json:"calibrated,omitempty"`
}

func writeValidationJSON(w io.Writer, rep *validate.Report, cal *validate.Calibration, calRep *validate.Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(validationJSON{Report: rep, Calibration: cal, Calibrated: calRep})
}
