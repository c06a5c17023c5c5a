package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/internal/atomicfile"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/solve/sim"
	"github.com/perfcast/perfcast/tracegen"
)

func newGenerateCmd(g *globalFlags) *cobra.Command {
	var (
		out, format        string
		metricsOut         string
		metricsEvery       time.Duration
		requests           int64
		seed               uint64
		noCPU, externalSpn bool
		endsOnResume       bool
		sample             float64
		f                  solveFlags
	)
	cmd := &cobra.Command{
		Use:   "generate MODEL -o TRACES",
		Short: "Simulate a model and write the traces it would emit",
		Long: `Simulate a model and write the spans its components would emit if they were
instrumented with OpenTelemetry, as OTLP JSON (one ExportTraceServiceRequest per
line) or OTLP protobuf (each request after its 4-byte length); gzip-compressed
when the file name ends in .gz.

Each workload-level call starts a trace with a SERVER span of the operation
called. A call gives a CLIENT span in the caller, from the call to the reply,
and a SERVER span of the callee from the moment it gets a thread (and, when
its steps begin with a hold of a resource marked before_span, such as a CPU
slot, that resource) to its end;
a send gives an instant PRODUCER span and a CONSUMER span of the receiving
operation. Server and consumer spans carry perfcast.cpu.time, the CPU time of
their cpu steps, unless --no-cpu-time; with --external-spans, delay steps
appear as CLIENT spans with peer.service "external" and no server span.
With --client-ends-on-resume, a CLIENT span ends when its caller goes on after
the reply (its next cpu step starts), as Go's HTTP client's spans do, so the
caller's wait for a thread or CPU slot to read the reply is inside it.
Replicas are hosts HOST-1, HOST-2, ...; service.instance.id is COMPONENT-N.
With --metrics, the hosts' CPU time, each span's spread over its duration,
is also written as a metrics file that "perfcast extract --metrics" reads:
with --no-cpu-time, test data for estimating CPU demands from utilization.
A trace's root span carries the request's parameters (the workload's params,
by name) and, for a closed workload, session.id naming the user
(WORKLOAD-N): "perfcast extract --config" with params: and session: reads
them back. With --sample P, each trace is kept with probability P, as an
OpenTelemetry probability sampler keeps it (by its trace id), and its spans'
trace state says so (ot=th:…); --metrics still counts every span's CPU.

The run starts with an empty system and no warm-up is cut. It writes the
first --requests requests to complete, every one whole. The same model, flags
and seed give the same file, byte for byte.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if out == "" {
				return usagef("generate needs -o TRACES (or -o - for standard output)")
			}
			if err := outputDir(out); err != nil {
				return err
			}
			if metricsOut != "" {
				if metricsOut == "-" || metricsOut == out {
					return usagef("--metrics needs a file of its own, not %q", metricsOut)
				}
				if err := outputDir(metricsOut); err != nil {
					return err
				}
			}
			if !(metricsEvery > 0) {
				return usagef("--metrics-interval must be positive, not %s", metricsEvery)
			}
			if !(sample > 0 && sample <= 1) {
				return usagef("--sample must be a probability in (0, 1], not %g", sample)
			}
			if requests <= 0 {
				return usagef("--requests must be positive, not %d", requests)
			}
			fmtOpt, err := tracegen.ParseFormat(format)
			if err != nil {
				return usageError{err}
			}
			m, err := f.loadModel(a[0])
			if err != nil {
				return err
			}
			dst, err := createOutput(cmd.OutOrStdout(), out)
			if err != nil {
				return err
			}
			opts := tracegen.Options{Format: fmtOpt, NoCPUTime: noCPU, Seed: seed, Sample: sample}
			tw := tracegen.NewWriter(dst.w, opts)
			mw := tracegen.NewMetrics(metricsEvery.Seconds(), opts)
			spans, traces := int64(0), map[uint64]struct{}{}
			var last float64
			res, err := sim.Record(cmd.Context(), m, sim.RecordOptions{Seed: seed, Requests: requests, ExternalSpans: externalSpn, ClientEndsOnResume: endsOnResume},
				func(s *sim.Span) error {
					spans++
					if s.Parent == 0 {
						traces[s.Trace] = struct{}{}
					}
					last = max(last, s.End)
					mw.Add(s)
					return tw.Add(s)
				})
			if err == nil {
				err = tw.Close()
			}
			if err == nil && !res.Stable {
				asked := ""
				if rr := res.Resources[res.Bottleneck]; rr != nil && rr.Utilization >= 1 {
					asked = fmt.Sprintf(", asked %.3g times what it can serve", rr.Utilization)
				}
				err = fmt.Errorf("%s: no steady state at this load (bottleneck %s%s): generate at a lower one, with --set 'workload.*.load=F'", a[0], res.Bottleneck, asked)
			}
			if n, _ := tw.Written(); err == nil && spans > 0 && n == 0 {
				err = fmt.Errorf("%s: --sample %g kept none of the %d traces", a[0], sample, len(traces))
			}
			if err == nil && spans == 0 {
				err = fmt.Errorf("%s: no spans generated: %s", a[0], strings.Join(res.Warnings, "; "))
			}
			if err == nil && metricsOut != "" {
				err = atomicfile.Write(metricsOut, func(w io.Writer) error { return mw.Write(w, tracegen.Machines(m)) })
			}
			if err != nil {
				dst.abort()
				return err
			}
			if err := dst.commit(); err != nil {
				return err
			}
			if !g.quiet {
				for _, w := range res.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
				keptSpans, keptTraces := tw.Written()
				kept := ""
				if keptTraces < int64(len(traces)) {
					kept = fmt.Sprintf(" kept of %d (--sample %g)", len(traces), sample)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "generated %s: %d requests, %d traces%s, %d spans over %s of simulated time\n",
					out, requests, keptTraces, kept, keptSpans, textout.Duration(last))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the traces to this `file` (.gz: gzip-compressed; - for standard output)")
	cmd.Flags().Int64Var(&requests, "requests", 10000, "number of workload requests whose traces are written")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed of the simulation (also varies the trace ids)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "change the model first: `KEY=VALUE`, e.g. workload.*.load=2; repeatable")
	cmd.Flags().BoolVar(&noCPU, "no-cpu-time", false, "leave out perfcast.cpu.time, as traces of systems that do not measure it")
	cmd.Flags().BoolVar(&externalSpn, "external-spans", false, "write delay steps as client spans to an uninstrumented peer \"external\"")
	cmd.Flags().BoolVar(&endsOnResume, "client-ends-on-resume", false, "end a client span when its caller goes on after the reply, as Go's HTTP client does")
	cmd.Flags().StringVar(&format, "format", "otlp-json", "`otlp-json` or otlp-proto")
	cmd.Flags().Float64Var(&sample, "sample", 1, "keep each trace with this `probability`, as a probability sampler does")
	cmd.Flags().StringVar(&metricsOut, "metrics", "", "also write the hosts' CPU time as a metrics `file` (CSV, cumulative cpu_seconds), as a host agent would have sampled it")
	cmd.Flags().DurationVar(&metricsEvery, "metrics-interval", 5*time.Second, "interval between the metrics' readings")
	return cmd
}

// output is where the traces go: standard output, or a file written
// through a temporary one, so that a failed run leaves no partial file.
type output struct {
	w    io.Writer
	file *atomicfile.File
	buf  *bufio.Writer // standard output's
	gz   *gzip.Writer
}

func createOutput(stdout io.Writer, path string) (*output, error) {
	o := &output{}
	if path == "-" {
		o.buf = bufio.NewWriter(stdout)
		o.w = o.buf
	} else {
		f, err := atomicfile.Create(path)
		if err != nil {
			return nil, err
		}
		o.file, o.w = f, f
	}
	if strings.HasSuffix(path, ".gz") {
		o.gz = gzip.NewWriter(o.w)
		o.w = o.gz
	}
	return o, nil
}

func (o *output) commit() error {
	if o.gz != nil {
		if err := o.gz.Close(); err != nil {
			o.abort()
			return fmt.Errorf("write traces: %w", err)
		}
	}
	if o.file != nil {
		return o.file.Commit()
	}
	if err := o.buf.Flush(); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	return nil
}

func (o *output) abort() {
	if o.file != nil {
		o.file.Abort()
	}
}
