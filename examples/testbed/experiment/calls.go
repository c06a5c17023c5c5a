package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/ingest"
)

// callTime is what the traces of a configuration's segments measured of
// the calls to one operation over the network, over their steady phases.
// A call is a server span whose parent is a client span.
type callTime struct {
	// N is the calls counted. Before is the mean time from the client
	// span's start to the server span's: the caller writing the request,
	// the network, and the callee's wait for a thread and a CPU slot.
	// Span is the server span's mean duration. Both in seconds.
	N            int
	Before, Span float64
}

// callTimes reads the traces of the segments in dirs (parts are their load
// generator's results, in the same order) and returns, per operation
// (`service/span name`), the times of the calls to it whose server span
// started in its segment's steady phase. A segment without traces adds
// nothing.
func callTimes(ctx context.Context, dirs []string, parts []*loadgen.Result) (map[string]*callTime, error) {
	type spanKey struct {
		trace ingest.TraceID
		span  ingest.SpanID
	}
	type server struct {
		parent     spanKey
		start, end int64
		op         string
	}
	out := map[string]*callTime{}
	for i, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.otlp.jsonl"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			continue
		}
		slices.Sort(files)
		r, err := ingest.Open(files, ingest.Options{})
		if err != nil {
			return nil, err
		}
		from, to := parts[i].SteadyStart.UnixNano(), parts[i].SteadyEnd.UnixNano()
		clients := map[spanKey]int64{} // start
		var servers []server
		for {
			s, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("%s: %w", dir, err)
			}
			switch s.Kind {
			case ingest.KindClient:
				clients[spanKey{s.TraceID, s.SpanID}] = s.Start
			case ingest.KindServer:
				if !s.ParentID.IsZero() && s.Start >= from && s.Start < to {
					servers = append(servers, server{spanKey{s.TraceID, s.ParentID}, s.Start, s.End, s.Service + "/" + s.Name})
				}
			}
		}
		r.Close()
		for _, sv := range servers {
			start, ok := clients[sv.parent]
			if !ok {
				continue
			}
			t := out[sv.op]
			if t == nil {
				t = &callTime{}
				out[sv.op] = t
			}
			t.N++
			t.Before += float64(sv.start-start) / 1e9
			t.Span += float64(sv.end-sv.start) / 1e9
		}
	}
	for _, t := range out {
		t.Before /= float64(t.N)
		t.Span /= float64(t.N)
	}
	return out, nil
}

// writeCalls reports, per configuration and operation called over the
// network, the calls' time before the callee's span and in it, measured
// and in the model: where the model's queue at a service differs from the
// service's, by call.
func (r *report) writeCalls(w io.Writer) {
	rows := r.rowsWhere(func(row reportRow) bool {
		return !strings.Contains(row.setup.Name, " from ") && len(row.measured.Calls) > 0
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Calls between the services (a diagnostic)\n\n"+
		"Per configuration and called operation, from the traces over the steady phases: the time from the\n"+
		"caller's client span starting to the callee's server span starting (the caller writing the request,\n"+
		"the loopback network, the callee's wait for a thread and its CPU slot), the server span's duration, and\n"+
		"the two together. The model's operation is timed from the request's arrival at the callee: before its\n"+
		"span are the waits for what it takes before spans start (its first CPU slot), and a wait for what it\n"+
		"takes inside (the catalog's database connections, after its first burst of CPU) is in its span; the\n"+
		"network is in the caller's fixed delays, not here. Compare the totals.\n\n")
	fmt.Fprintf(w, "| configuration | operation | calls | measured before | measured span | measured total | predicted before | predicted span | predicted total | error |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range rows {
		for _, op := range slices.Sorted(maps.Keys(row.measured.Calls)) {
			c := row.measured.Calls[op]
			before, span, total := "–", "–", math.NaN()
			if p := row.predicted; p != nil && p.res != nil && p.res.Stable {
				if o := p.res.Operations[op]; o != nil {
					total = o.ResponseTime.Mean
					in := total
					if o.Span != nil {
						in = o.Span.Mean
					}
					before, span = fmt.Sprintf("%.2f", 1e3*(total-in)), fmt.Sprintf("%.2f", 1e3*in)
				}
			}
			predicted := "–"
			if !math.IsNaN(total) {
				predicted = fmt.Sprintf("%.2f", 1e3*total)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.2f | %.2f | %.2f | %s | %s | %s | %s |\n", row.setup.Name, op, c.N,
				1e3*c.Before, 1e3*c.Span, 1e3*(c.Before+c.Span), before, span, predicted, pct(relErr(total, c.Before+c.Span)))
		}
	}
	fmt.Fprintln(w)
}
