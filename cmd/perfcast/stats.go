package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/trace"
)

// statsReport is what `perfcast stats --json` prints.
type statsReport struct {
	Files         []ingest.FileStats `json:"files"`
	Traces        int64              `json:"traces"`
	Spans         int64              `json:"spans"`
	PartialTraces int64              `json:"partial_traces"`
	Evicted       int64              `json:"evicted"`
	DroppedSpans  int64              `json:"dropped_spans"`
	SkewAdjusted  int64              `json:"skew_adjusted"`
	AsyncEdges    int64              `json:"async_edges"`
	ExternalLinks int64              `json:"external_links"`
	Services      int                `json:"services"`
	Operations    int                `json:"operations"`
	TopOperations []trace.OpCount    `json:"top_operations"`
	Damage        ingest.Damage      `json:"damage"`
	// Sampling counts the traces whose spans say how they were kept: by
	// probability (the smallest and largest) or by a rate limiter.
	Sampling samplingStats `json:"sampling"`
	// FirstRequest and LastRequest are when the earliest and the latest
	// trace's request arrived (RFC 3339, UTC): the range --from and --to
	// of extract, analyze and validate select from.
	FirstRequest string `json:"first_request,omitempty"`
	LastRequest  string `json:"last_request,omitempty"`
	// With --config: the operations as extraction names them (rules,
	// renames and identifier folding applied), most executed first, and per
	// attribute the configuration reads, the traces that carry it.
	Extracted  []extractedOp    `json:"extracted_operations,omitempty"`
	Attributes map[string]int64 `json:"attributes,omitempty"`
	// ByService is, per service, where its spans ran and what they carry:
	// what extraction makes replicas, processes, CPU slots and demands of.
	ByService []serviceStats `json:"by_service"`
}

// serviceStats is what a service's spans say of where they ran.
type serviceStats struct {
	Service string `json:"service"`
	Spans   int64  `json:"spans"`
	// Hosts, Instances and Processes count the distinct host names,
	// instances (service.instance.id, else k8s.pod.name) and processes
	// (extract.ProcessOf) its spans name.
	Hosts     int `json:"hosts"`
	Instances int `json:"instances"`
	Processes int `json:"processes"`
	// Runtimes are the languages and runtimes its spans' resources name
	// (telemetry.sdk.language, and process.runtime.name where it says
	// more: "python (cpython)"), most spans first.
	Runtimes []string `json:"runtimes"`
	// ServerSpans counts its server and consumer spans, CPUTimes those of
	// them that carry a CPU time.
	ServerSpans int64 `json:"server_spans"`
	CPUTimes    int64 `json:"cpu_times"`
}

// serviceTally gathers a serviceStats from spans.
type serviceTally struct {
	spans, server, cpu      int64
	hosts, instances, procs map[string]bool
	runtimes                map[string]int64
}

func (t *serviceTally) add(s *ingest.Span) {
	t.spans++
	if s.Host != "" {
		t.hosts[s.Host] = true
	}
	if r := s.Replica(); r != "" {
		t.instances[r] = true
	}
	if p := extract.ProcessOf(s); p != "" {
		t.procs[p] = true
	}
	if p := s.Process; p != nil && p.Language != "" {
		t.runtimes[extract.RuntimeName(p.Language, p.Runtime)]++
	}
	if s.Kind == ingest.KindServer || s.Kind == ingest.KindConsumer {
		t.server++
		if s.HasCPUTime() {
			t.cpu++
		}
	}
}

// byService turns the tallies into serviceStats, by service name.
func byService(tallies map[string]*serviceTally) []serviceStats {
	out := []serviceStats{}
	for _, name := range slices.Sorted(maps.Keys(tallies)) {
		t := tallies[name]
		rts := slices.Sorted(maps.Keys(t.runtimes))
		slices.SortStableFunc(rts, func(a, b string) int { return cmp.Compare(t.runtimes[b], t.runtimes[a]) })
		if rts == nil {
			rts = []string{}
		}
		out = append(out, serviceStats{Service: name, Spans: t.spans, Hosts: len(t.hosts), Instances: len(t.instances),
			Processes: len(t.procs), Runtimes: rts, ServerSpans: t.server, CPUTimes: t.cpu})
	}
	return out
}

// samplingStats counts the traces whose spans say they were sampled.
type samplingStats struct {
	Sampled     int64   `json:"sampled_traces"`
	MinKept     float64 `json:"min_probability,omitempty"`
	MaxKept     float64 `json:"max_probability,omitempty"`
	RateLimited int64   `json:"rate_limited_traces"`
}

// add counts one trace.
func (s *samplingStats) add(t *trace.Tree) {
	said := t.Sampling()
	switch p := said.Probability; {
	case p > 0 && p < 1:
		s.Sampled++
		if s.MinKept == 0 || p < s.MinKept {
			s.MinKept = p
		}
		s.MaxKept = max(s.MaxKept, p)
	case p == 0 && said.RateLimited:
		s.RateLimited++
	}
}

// extractedOp is an operation as extraction names it, with its executions.
type extractedOp struct {
	Operation  string `json:"operation"`
	Executions int64  `json:"executions"`
}

func newStatsCmd() *cobra.Command {
	var (
		jsonOut    bool
		top        int
		opts       trace.Options
		configPath string
	)
	cmd := &cobra.Command{
		Use:   "stats TRACES...",
		Short: "Show what perfcast reads from trace files",
		Long: `Read trace files and assemble their call trees, then print what was found:
each file's format and span count, the number of traces, spans, services and
operations, the most frequent operations, per service the hosts, instances
and processes its spans name, their runtimes and how many of its server
spans carry a CPU time (what extraction makes replicas, CPU slots, workers
and demands of), and everything that was skipped or
repaired (unparseable lines, truncated input, spans without ids or with
negative durations, duplicate spans, orphans whose parent is missing, traces
split because their spans arrived too far apart), with where it was found.

TRACES are files or directories (read recursively, in name order) in any
format perfcast reads: OTLP JSON or protobuf, Zipkin v2 JSON, Jaeger JSON,
gzip included; - reads standard input.

With --config, it also lists the operations as extraction would name them
(component and operation rules, renames and identifier folding applied) and,
for every attribute the configuration reads (params, session, the rules'
attributes), how many traces carry it: a way to try a configuration
before extracting.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, paths []string) error {
			if top < 0 {
				return usagef("--top must not be negative")
			}
			var cfg *extract.Config
			if configPath != "" {
				var err error
				if cfg, err = extract.LoadConfig(configPath); err != nil {
					return err
				}
			}
			attrs := cfg.Attributes()
			r, err := ingest.Open(paths, ingest.Options{Stdin: cmd.InOrStdin(), Attributes: attrs})
			if err != nil {
				return err
			}
			defer r.Close()
			st := extract.NewState()
			carried := map[string]int64{}
			tallies := map[string]*serviceTally{}
			var sampling samplingStats
			first, last := int64(math.MaxInt64), int64(math.MinInt64)
			ast, err := trace.Run(cmd.Context(), r, opts, func(t *trace.Tree) error {
				sampling.add(t)
				t.Walk(func(n *trace.Node, _ int) bool {
					tl := tallies[n.Span.Service]
					if tl == nil {
						tl = &serviceTally{hosts: map[string]bool{}, instances: map[string]bool{}, procs: map[string]bool{}, runtimes: map[string]int64{}}
						tallies[n.Span.Service] = tl
					}
					tl.add(n.Span)
					return true
				})
				if len(t.Roots) > 0 {
					first, last = min(first, t.Roots[0].Span.Start), max(last, t.Roots[0].Span.Start)
				}
				if cfg == nil {
					return nil
				}
				st.Fold(t, cfg)
				for _, k := range attrs {
					found := false
					t.Walk(func(n *trace.Node, _ int) bool {
						if _, ok := n.Span.Lookup(k); ok {
							found = true
						}
						return !found
					})
					if found {
						carried[k]++
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			rst := r.Stats()
			rep := statsReport{
				Files: rst.Files, Traces: ast.Traces, Spans: ast.Spans, PartialTraces: ast.PartialTraces,
				Evicted: ast.Evicted, DroppedSpans: ast.DroppedSpans, SkewAdjusted: ast.SkewAdjusted,
				AsyncEdges: ast.AsyncEdges, ExternalLinks: ast.ExternalLinks, Services: ast.Services,
				Operations: len(ast.Operations), TopOperations: ast.Operations[:min(top, len(ast.Operations))],
				Sampling: sampling, ByService: byService(tallies),
			}
			if first <= last {
				rep.FirstRequest = time.Unix(0, first).UTC().Format(time.RFC3339Nano)
				rep.LastRequest = time.Unix(0, last).UTC().Format(time.RFC3339Nano)
			}
			rep.Damage.Merge(rst.Damage)
			rep.Damage.Merge(ast.Damage)
			if cfg != nil {
				for _, id := range st.Operations() {
					t, _ := st.OperationTimes(id)
					rep.Extracted = append(rep.Extracted, extractedOp{id, t.Count()})
				}
				slices.SortStableFunc(rep.Extracted, func(a, b extractedOp) int { return cmp.Compare(b.Executions, a.Executions) })
				rep.Extracted = rep.Extracted[:min(top, len(rep.Extracted))]
				rep.Attributes = map[string]int64{}
				for _, k := range attrs {
					rep.Attributes[k] = carried[k]
				}
			}
			if rep.TopOperations == nil {
				rep.TopOperations = []trace.OpCount{}
			}
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return writeStats(cmd.OutOrStdout(), &rep)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&jsonOut, "json", false, "print the statistics as JSON")
	f.IntVar(&top, "top", 10, "list this many of the most frequent operations")
	f.IntVar(&opts.IdleSpans, "idle-spans", trace.DefaultIdleSpans, "a trace is complete after this many `spans` of others arrived since its last one")
	f.IntVar(&opts.MaxOpenTraces, "max-open-traces", trace.DefaultMaxOpenTraces, "keep at most this many incomplete `traces` in memory")
	f.BoolVar(&opts.DropOrphans, "drop-orphans", false, "leave out spans whose parent is missing, instead of making partial trees")
	f.BoolVar(&opts.NoSkewCorrection, "no-skew-correction", false, "keep span times as read, even where hosts' clocks disagree")
	f.StringVar(&configPath, "config", "", "an extraction configuration `file`: also list the operations as extraction would name them, and the traces that carry its attributes")
	return cmd
}

// writeStats prints the report as tables.
func writeStats(w io.Writer, rep *statsReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tFORMAT\tSPANS\tBYTES\tDAMAGE")
	var skipped []string
	for _, f := range rep.Files {
		format := string(f.Format)
		if f.Gzip {
			format += "+gzip"
		}
		if f.Skipped != "" {
			format = "skipped"
			skipped = append(skipped, filepath.Clean(f.Path)+": "+f.Skipped)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", filepath.Clean(f.Path), format, f.Spans, f.Bytes, f.Damage.Total())
	}
	tw.Flush()
	if len(skipped) > 0 {
		fmt.Fprintf(w, "\nskipped %s of the directories given, which hold no traces:\n", textout.Plural(len(skipped), "file"))
		for _, s := range skipped {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	fmt.Fprintf(w, "\ntraces %d, spans %d, services %d, operations %d\n", rep.Traces, rep.Spans, rep.Services, rep.Operations)
	if rep.FirstRequest != "" {
		fmt.Fprintf(w, "requests from %s to %s\n", rep.FirstRequest, rep.LastRequest)
	}
	fmt.Fprintf(w, "partial traces %d, evicted early %d, dropped spans %d\n", rep.PartialTraces, rep.Evicted, rep.DroppedSpans)
	fmt.Fprintf(w, "skew-corrected spans %d, asynchronous calls %d, links to other traces %d\n", rep.SkewAdjusted, rep.AsyncEdges, rep.ExternalLinks)
	if s := rep.Sampling; s.Sampled > 0 {
		kept := fmt.Sprintf("probability %.3g", s.MinKept)
		if s.MinKept != s.MaxKept {
			kept = fmt.Sprintf("probabilities %.3g to %.3g", s.MinKept, s.MaxKept)
		}
		fmt.Fprintf(w, "sampled traces %d, kept with %s: each stands for 1/p requests\n", s.Sampled, kept)
	}
	if s := rep.Sampling; s.RateLimited > 0 {
		fmt.Fprintf(w, "traces a rate-limiting sampler kept %d: how many requests they stand for is unknown (give sampling: P in --config)\n", s.RateLimited)
	}
	if len(rep.TopOperations) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "SPANS\tSERVICE\tOPERATION")
		for _, op := range rep.TopOperations {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", op.Count, orDash(op.Service), orDash(op.Name))
		}
		tw.Flush()
	}
	if len(rep.ByService) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "SERVICE\tSPANS\tHOSTS\tINSTANCES\tPROCESSES\tRUNTIME\tCPU TIMES")
		for _, s := range rep.ByService {
			rt := "-"
			if len(s.Runtimes) > 0 {
				rt = strings.Join(s.Runtimes, ", ")
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d of %d\n", orDash(s.Service), s.Spans, s.Hosts, s.Instances, s.Processes, rt, s.CPUTimes, s.ServerSpans)
		}
		tw.Flush()
	}
	if len(rep.Extracted) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "EXECUTIONS\tOPERATION AS EXTRACTED")
		for _, op := range rep.Extracted {
			fmt.Fprintf(tw, "%d\t%s\n", op.Executions, op.Operation)
		}
		tw.Flush()
	}
	if len(rep.Attributes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "ATTRIBUTE\tTRACES CARRYING IT")
		for _, k := range slices.Sorted(maps.Keys(rep.Attributes)) {
			fmt.Fprintf(tw, "%s\t%d of %d\n", k, rep.Attributes[k], rep.Traces)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if rep.Damage.Total() == 0 {
		_, err := fmt.Fprintln(w, "no damage")
		return err
	}
	fmt.Fprintln(w, "DAMAGE")
	for _, k := range rep.Damage.Kinds() {
		fmt.Fprintf(w, "%s %d\n", k, rep.Damage.Counts[k])
		for _, m := range rep.Damage.Samples[k] {
			fmt.Fprintf(w, "  %s\n", m)
		}
		if n := rep.Damage.Counts[k] - int64(len(rep.Damage.Samples[k])); n > 0 && len(rep.Damage.Samples[k]) > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", n)
		}
	}
	return nil
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
