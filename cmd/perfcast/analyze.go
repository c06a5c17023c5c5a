package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/internal/atomicfile"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/report"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/mva"
)

func newAnalyzeCmd(g *globalFlags) *cobra.Command {
	var (
		f                     solveFlags
		out, configPath, name string
		metrics, states       []string
		points                int
		window                windowFlags
	)
	cmd := &cobra.Command{
		Use:   "analyze [TRACES...] [--state DIR]... -o DIR",
		Short: "Extract a model, answer the capacity questions, write a report",
		Long: `Do the main job in one step: extract a model from the traces, solve it at the
observed workload and compare with what the traces measured, solve it at
growing loads up to where its bottleneck saturates, and write

  DIR/model.yaml     the model (edit it, and ask more with predict, sweep, capacity)
  DIR/results.json   everything the report shows, as data
  DIR/report.html    the report: one self-contained page to read and forward

The observed load is simulated by default (--solver), so that percentiles can
be compared with the traces'. Unless --solver is given, the load levels of the
sweep are solved by mean-value analysis when the model is within its reach at
every level, and by simulation otherwise (one method for every level, so that
the curves do not jump between methods); simulated levels are solved to a
precision of 0.05 unless --precision is given. All workloads' loads grow
together (workload.*.load): open rates, and closed populations.`,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 && len(states) == 0 {
				return usagef("analyze needs TRACES or --state DIR")
			}
			if out == "" {
				return usagef("analyze needs -o DIR, the directory to write model.yaml, results.json and report.html to")
			}
			if len(f.sets) > 0 {
				return usagef("analyze answers for the system as observed; ask what-if questions of DIR/model.yaml with predict, sweep or capacity --set")
			}
			if _, err := f.options(); err != nil {
				return err
			}
			if points < 2 {
				return usagef("--points must be at least 2, not %d", points)
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
				name = filepath.Base(filepath.Clean(out))
			}
			ctx := cmd.Context()
			prog := newProgress(cmd.ErrOrStderr(), g.quiet)
			defer prog.close()

			prog.set("reading traces", -1)
			sts, err := loadStates(states)
			if err != nil {
				return err
			}
			ex, err := extract.RunWith(ctx, a, sts, name, cfg)
			if err != nil {
				return err
			}
			m := ex.Model
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("analyze: %w", err)
			}
			modelPath := filepath.Join(out, "model.yaml")
			if err := writeModel(cmd.OutOrStdout(), modelPath, m); err != nil {
				return err
			}
			m.File = modelPath
			res, err := report.Analyze(ctx, m, analyzeOptions(cmd, &f, prog, points, ex.Report, ex.State.Measured(m)))
			if err != nil {
				return err
			}
			prog.close()
			resultsPath := filepath.Join(out, "results.json")
			if err := writeResults(resultsPath, res); err != nil {
				return err
			}
			reportPath := filepath.Join(out, "report.html")
			if err := writeHTML(reportPath, m, res); err != nil {
				return err
			}
			if !g.quiet {
				writeReport(cmd.ErrOrStderr(), ex.Report, modelPath)
			}
			w := cmd.OutOrStdout()
			writeFindings(w, m, res)
			fmt.Fprintf(w, "wrote %s, %s, %s\n", modelPath, resultsPath, reportPath)
			return nil
		},
	}
	f.register(cmd)
	// The observed load is simulated unless told otherwise: its percentiles
	// are what the traces' are compared with.
	f.solver = "sim"
	cmd.Flags().Lookup("solver").DefValue = "sim"
	cmd.Flags().StringVarP(&out, "output", "o", "", "write model.yaml, results.json and report.html to this `directory` (made if missing)")
	cmd.Flags().StringVar(&configPath, "config", "", "extraction configuration `file` (hosts' cores, component names)")
	cmd.Flags().StringArrayVar(&metrics, "metrics", nil, "utilization metrics `file` (CSV, Prometheus or OTLP JSON); repeatable")
	cmd.Flags().StringVar(&name, "name", "", "the model's name (default: the output directory's name)")
	cmd.Flags().StringArrayVar(&states, "state", nil, "also the traces folded into this perfcast receive state `directory` (or state file); repeatable")
	cmd.Flags().IntVar(&points, "points", report.DefaultPoints, "load levels of the sweep, from the observed load to near saturation")
	window.register(cmd)
	return cmd
}

// analyzeOptions tells report.Analyze how to solve: the observed load with
// the chosen solver; the load levels, several at a time, with the solver
// given explicitly, or else with the analytical solver when the model at
// every level is within its reach and by simulation otherwise.
func analyzeOptions(cmd *cobra.Command, f *solveFlags, prog *progress, points int, rep *extract.Report, measured *solve.Result) report.Options {
	sweepFlags := *f
	sweepFlags.workers = 1
	sweepFlags.precision = sweepPrecision(f.precision, cmd.Flags().Changed("precision"))
	var supported func(*model.Model) (bool, []string)
	var fallback func(context.Context, *model.Model) (*solve.Result, error)
	if !cmd.Flags().Changed("solver") {
		sweepFlags.solver = "mva"
		supported = mva.Supports
		simFlags := sweepFlags
		simFlags.solver = "sim"
		fallback = func(ctx context.Context, m *model.Model) (*solve.Result, error) {
			return solveModel(ctx, m, &simFlags)
		}
	}
	return report.Options{
		SweepSupported: supported,
		SweepFallback:  fallback,
		Solve: func(ctx context.Context, m *model.Model) (*solve.Result, error) {
			prog.set("solving the observed load", 0)
			observed := *f
			observed.progress = func(done float64) { prog.set("solving the observed load", done) }
			return solveModel(ctx, m, &observed)
		},
		SolveSweep: func(ctx context.Context, m *model.Model) (*solve.Result, error) {
			return solveModel(ctx, m, &sweepFlags)
		},
		Workers:    f.workers,
		Points:     points,
		Extraction: rep,
		Measured:   measured,
		Progress: func(done, total int) {
			prog.set(fmt.Sprintf("solving load levels %d/%d", done, total), float64(done)/float64(total))
		},
	}
}

// levelPrecision is the precision a simulated load level of the sweep is
// solved to unless --precision is given: its curves need less than the
// observed load, whose percentiles are set against the traces', and the
// levels near saturation are the costly ones (the quickstart's analyze
// took 5 min 9 s of CPU at 0.02, 2 min 8 s at 0.05).
const levelPrecision = 0.05

// sweepPrecision is the precision of the sweep's load levels: the one
// given with --precision (set), else the coarser of p and levelPrecision.
func sweepPrecision(p float64, set bool) float64 {
	if set {
		return p
	}
	return math.Max(p, levelPrecision)
}

// writeResults writes the results as indented JSON.
func writeResults(path string, r *report.Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// writeHTML writes the report page to a file.
func writeHTML(path string, m *model.Model, r *report.Results) error {
	return atomicfile.Write(path, func(w io.Writer) error { return report.Write(w, m, r) })
}

// findingsWorkloads is how many workloads the findings name.
const findingsWorkloads = 10

// writeFindings prints the answers in a few lines: the bottleneck, where it
// saturates, and each workload's predicted response time (of the first
// findingsWorkloads).
func writeFindings(w io.Writer, m *model.Model, r *report.Results) {
	if s := r.Saturation; s != nil {
		busy := "busy"
		if rr := r.Predicted.Resources[s.Resource]; rr != nil && rr.LimitUtilization != nil {
			busy = "of its CPU limit used"
		}
		fmt.Fprintf(w, "bottleneck: %s, %.1f%% %s at the observed load; saturates at %.3g× the observed load", s.Resource, s.Utilization*100, busy, s.Factor)
		var at []string
		for _, wl := range m.Workloads {
			if v, ok := s.At["workload."+wl.Name+".open.rate"]; ok {
				at = append(at, fmt.Sprintf("%s %.4g/s", wl.Name, v))
			}
			if v, ok := s.At["workload."+wl.Name+".closed.users"]; ok {
				at = append(at, fmt.Sprintf("%s %.0f users", wl.Name, v))
			}
		}
		if len(at) > 0 {
			fmt.Fprintf(w, " (%s)", textout.Abbreviate(at, findingsWorkloads))
		}
		fmt.Fprintln(w)
	}
	pred := r.Predicted
	if !pred.Stable {
		fmt.Fprintln(w, "the model is unstable at the observed load")
		return
	}
	for i, wl := range m.Workloads {
		if i == findingsWorkloads {
			fmt.Fprintf(w, "and %s more: results.json and the report have every one\n", textout.Plural(len(m.Workloads)-i, "workload"))
			break
		}
		wr := pred.Workloads[wl.Name]
		if wr == nil {
			continue
		}
		line := fmt.Sprintf("%s: predicted mean %s", wl.Name, textout.Duration(wr.ResponseTime.Mean))
		if wr.ResponseTime.P95 != nil {
			line += ", p95 " + textout.Duration(*wr.ResponseTime.P95)
		}
		if r.Measured != nil {
			if mr := r.Measured.Workloads[wl.Name]; mr != nil {
				line += "; measured mean " + textout.Duration(mr.ResponseTime.Mean)
				if mr.ResponseTime.P95 != nil {
					line += ", p95 " + textout.Duration(*mr.ResponseTime.P95)
				}
			}
		}
		fmt.Fprintln(w, line)
	}
	if s := r.Sweep; s != nil && len(s.Fallback) > 0 {
		fmt.Fprintf(w, "load levels simulated, outside the analytical solver's reach: %s (--solver mva solves them analytically all the same)\n", strings.Join(s.Fallback, "; "))
	}
}

// progress shows on a terminal what a long command is doing: a spinner, the
// phase, how far it has come and the time spent. It shows nothing when
// standard error is not a terminal, or with --quiet.
type progress struct {
	w     io.Writer
	mu    sync.Mutex
	phase string
	frac  float64 // -1 when unknown
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// newProgress starts a progress line on w when w is a terminal.
func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{frac: -1, start: time.Now()}
	if quiet || !isTerminal(w) {
		return p
	}
	p.w = w
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.loop()
	return p
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// set changes the phase and the fraction done (-1: unknown).
func (p *progress) set(phase string, frac float64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	p.phase, p.frac = phase, frac
	p.mu.Unlock()
}

func (p *progress) loop() {
	defer close(p.done)
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	tick := time.NewTicker(120 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.stop:
			fmt.Fprint(p.w, "\r\033[K")
			return
		case <-tick.C:
		}
		p.mu.Lock()
		line := fmt.Sprintf("%c %s", frames[i%len(frames)], p.phase)
		if p.frac >= 0 {
			line += fmt.Sprintf(" %3.0f%%", p.frac*100)
		}
		line += fmt.Sprintf(" · %.1f s", time.Since(p.start).Seconds())
		p.mu.Unlock()
		fmt.Fprint(p.w, "\r\033[K"+line)
	}
}

// close clears the progress line; calling it again does nothing.
func (p *progress) close() {
	if p == nil || p.w == nil {
		return
	}
	p.once.Do(func() {
		close(p.stop)
		<-p.done
	})
}
