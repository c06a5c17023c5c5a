package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/internal/atomicfile"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve/sim"
)

func newExtractCmd(g *globalFlags) *cobra.Command {
	var (
		out, configPath, name string
		metrics, states       []string
		jsonReport            bool
		window                windowFlags
	)
	cmd := &cobra.Command{
		Use:   "extract [TRACES...] [--state DIR]... -o MODEL",
		Short: "Build a model from traces",
		Long: `Build a performance model from traces: components and hosts from where spans
ran, operations and their calls (branches, loops, parallel blocks, asynchronous
sends, external calls) from the observed call sequences, CPU demands from the
span attribute perfcast.cpu.time, or from utilization metrics (--metrics) by
the estimator that fits them best, or, without either, from each operation's
own time, with a warning; and open workloads from the requests' entry
operations (a closed one from sessions, with --config).

TRACES are files or directories in any format perfcast reads (OTLP JSON or
protobuf, Zipkin v2, Jaeger JSON; gzip included), or - for standard input.
--state adds the traces a perfcast receive folded into its state directory;
several states (and trace files) merge into one model.
The extraction report (evidence and warnings) goes to standard error, or to
standard output as JSON with --json.`,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 && len(states) == 0 {
				return usagef("extract needs TRACES or --state DIR")
			}
			if out == "" {
				return usagef("extract needs -o MODEL (or -o - for standard output)")
			}
			if err := outputDir(out); err != nil {
				return err
			}
			cfg, err := extractConfig(configPath, metrics)
			if err != nil {
				return err
			}
			if window.set() && len(states) > 0 {
				return usagef("--from and --to select traces as they are read; a --state holds traces already folded")
			}
			if err := window.apply(cfg); err != nil {
				return err
			}
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
				if out == "-" {
					name = "extracted"
				}
			}
			sts, err := loadStates(states)
			if err != nil {
				return err
			}
			res, err := extract.RunWith(cmd.Context(), a, sts, name, cfg)
			if err != nil {
				return err
			}
			if err := writeModel(cmd.OutOrStdout(), out, res.Model); err != nil {
				return err
			}
			if jsonReport {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(res.Report)
			}
			if !g.quiet {
				writeReport(cmd.ErrOrStderr(), res.Report, out)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the model to this `file` (- for standard output)")
	cmd.Flags().StringVar(&configPath, "config", "", "extraction configuration `file` (hosts' cores, component names)")
	cmd.Flags().StringArrayVar(&metrics, "metrics", nil, "utilization metrics `file` (CSV, Prometheus or OTLP JSON); repeatable")
	cmd.Flags().StringVar(&name, "name", "", "the model's name (default: from the output file name)")
	cmd.Flags().StringArrayVar(&states, "state", nil, "also the traces folded into this perfcast receive state `directory` (or state file); repeatable")
	cmd.Flags().BoolVar(&jsonReport, "json", false, "print the extraction report as JSON on standard output")
	window.register(cmd)
	return cmd
}

// writeModel writes a model to a file, or to w for "-".
func writeModel(w io.Writer, path string, m *model.Model) error {
	if path == "-" {
		return m.Encode(w, model.YAML)
	}
	format := model.YAML
	if strings.HasSuffix(path, ".json") {
		format = model.JSON
	}
	return atomicfile.Write(path, func(w io.Writer) error { return m.Encode(w, format) })
}

// writeReport prints the extraction report for a person.
func writeReport(w io.Writer, r *extract.Report, out string) {
	share := 0.0
	if r.Spans > 0 {
		share = float64(r.Modeled) / float64(r.Spans)
	}
	fmt.Fprintf(w, "extracted %s: %s, %s, %s from %s (%s, %.0f%% modeled) over %s\n",
		out, textout.Plural(r.Components, "component"), textout.Plural(r.Operations, "operation"), textout.Plural(r.Workloads, "workload"),
		textout.Plural(int(r.Traces), "trace"), textout.Plural(int(r.Spans), "span"), share*100, textout.Duration(r.Duration))
	for _, e := range r.Evidence {
		fmt.Fprintf(w, "  found: %s\n", e)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if r.Demands != nil && r.Demands.Estimated() {
		fmt.Fprintln(w, "CPU demands estimated from utilization metrics:")
		var b strings.Builder
		_ = r.Demands.WriteText(&b)
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// extractConfig loads the extraction configuration file, if one is named,
// adds the --metrics files to it and gives it the simulator.
func extractConfig(path string, metrics []string) (*extract.Config, error) {
	cfg := &extract.Config{}
	if path != "" {
		c, err := extract.LoadConfig(path)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	cfg.Metrics = append(cfg.Metrics, metrics...)
	cfg.Simulator = sim.Solver{}
	return cfg, nil
}
