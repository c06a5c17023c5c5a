// Package receive is perfcast's live OTLP receiver: it takes the spans an
// OpenTelemetry SDK or Collector exports over OTLP/HTTP (Handler) or
// OTLP/gRPC (GRPCServer), assembles them
// into call trees as they complete, folds the trees into an extraction
// state, and keeps that state on disk, so that a model can be made from
// it at any time, after a restart, or merged with the states of other
// receivers (extract.RunWith).
//
// A trace is complete when none of its spans has arrived for Options.Idle.
// The state is saved every Options.Checkpoint and when the receiver
// stops, together with the model made from it. Traces still open when it
// stops are folded as they are (partial if spans were still to come):
// only the state survives a restart, not the spans in flight.
package receive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/internal/atomicfile"
	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/trace"
)

// Files in the state directory.
const (
	// StateFile is the extraction state (extract.State.Save).
	StateFile = "state.json.gz"
	// ModelFile is the model made at the last checkpoint.
	ModelFile = "model.yaml"
	// ReportFile is that model's extraction report, as JSON.
	ReportFile = "report.json"
)

// Defaults for Options.
const (
	DefaultIdle         = 30 * time.Second
	DefaultCheckpoint   = time.Minute
	DefaultMaxBodyBytes = 64 << 20
	defaultTick         = time.Second
)

// Options configure a Receiver.
type Options struct {
	// Dir holds the state; it is created if need be, and a state found
	// there is loaded and folded on.
	Dir string
	// Config is the extraction configuration: how spans fold (component
	// names, parameters, sessions) and how the model is made (hosts,
	// metrics files, declared pools, the simulator generating uses:
	// perfcast receive gives sim.Solver). Folding on a state saved under
	// another configuration mixes the two.
	Config *extract.Config
	// Name is the model's name (default "received").
	Name string
	// Idle is how long a trace receives no span before it is complete
	// (default DefaultIdle).
	Idle time.Duration
	// Checkpoint is how often the state and the model are written, when
	// anything came (default DefaultCheckpoint).
	Checkpoint time.Duration
	// MaxOpenTraces bounds the traces waiting to complete (see
	// trace.Options); zero means trace.DefaultMaxOpenTraces.
	MaxOpenTraces int
	// MaxBodyBytes bounds a request's body, before and after
	// decompression (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives what the receiver does; nil means slog.Default().
	Logger *slog.Logger
	// tick is how often idle traces are looked for (tests shorten it).
	tick time.Duration
}

// Stats counts what a Receiver has taken in since it started.
type Stats struct {
	// Requests counts export requests, BadRequests those refused whole
	// (not decodable, another content type, too large).
	Requests    int64 `json:"requests"`
	BadRequests int64 `json:"bad_requests"`
	// Spans counts the spans accepted, RejectedSpans those refused one by
	// one (no ids, no times).
	Spans         int64 `json:"spans"`
	RejectedSpans int64 `json:"rejected_spans"`
	// Traces counts the traces in the state, those of a state loaded at
	// start included; OpenTraces those waiting to complete.
	Traces     int64 `json:"traces"`
	OpenTraces int   `json:"open_traces"`
	// Checkpoints counts the states saved, the last at LastSave.
	Checkpoints int64     `json:"checkpoints"`
	LastSave    time.Time `json:"last_save,omitzero"`
	// Assembly is what assembling the spans found: traces, partial and
	// evicted ones, damage (split traces, orphans, duplicates).
	Assembly *trace.Stats `json:"assembly,omitempty"`
}

// Receiver folds received spans into an extraction state. Its HTTP
// handler may serve many requests at once; one goroutine, Run, does the
// folding.
type Receiver struct {
	opts Options
	log  *slog.Logger

	in    chan []*ingest.Span
	calls chan func()
	// stopped is closed when Run has returned: handlers then refuse.
	stopped chan struct{}
	running atomic.Bool
	// stopping is set when Run begins to finish; inflight counts the
	// handlers between checking it and handing their spans over, so that
	// Run folds every batch a handler answered for.
	stopping atomic.Bool
	inflight atomic.Int64

	requests, badRequests, spans, rejected atomic.Int64

	// Owned by Run.
	st       *extract.State
	asm      *trace.Assembler
	marks    []mark
	foldedAt int64 // st.Traces at the last model written
	// savedAt and savedTraces are the spans received and the traces
	// folded at the last checkpoint.
	savedAt, savedTraces int64
	lastSave             time.Time
	checkpts             int64

	statsMu sync.Mutex
	stats   Stats // a copy Run refreshes for Stats
}

// mark notes how many spans had arrived at a time.
type mark struct {
	at       time.Time
	received int64
}

// New returns a Receiver over opts.Dir, loading the state saved there.
func New(opts Options) (*Receiver, error) {
	if opts.Dir == "" {
		return nil, errors.New("receive: no state directory")
	}
	if opts.Name == "" {
		opts.Name = "received"
	}
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.Checkpoint <= 0 {
		opts.Checkpoint = DefaultCheckpoint
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.tick <= 0 {
		opts.tick = max(min(defaultTick, opts.Idle/4), time.Millisecond)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	st, err := loadState(filepath.Join(opts.Dir, StateFile))
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = extract.NewState()
	} else {
		log.Info("state loaded", "file", filepath.Join(opts.Dir, StateFile), "traces", st.Traces, "spans", st.Spans)
	}
	r := &Receiver{
		opts:     opts,
		log:      log,
		in:       make(chan []*ingest.Span, 64),
		calls:    make(chan func()),
		stopped:  make(chan struct{}),
		st:       st,
		foldedAt: st.Traces,
	}
	// Traces complete by time alone (and by MaxOpenTraces), not after a
	// count of later spans, which a high rate would reach before Idle.
	r.asm = trace.New(trace.Options{IdleSpans: math.MaxInt, MaxOpenTraces: opts.MaxOpenTraces}, func(t *trace.Tree) error {
		r.st.Fold(t, opts.Config)
		return nil
	})
	r.refreshStats()
	return r, nil
}

// loadState reads a saved state, or returns nil when there is none.
func loadState(path string) (*extract.State, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	defer f.Close()
	st, err := extract.LoadState(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// LoadState reads the state a receiver keeps in dir (or the state file
// itself, when path names one).
func LoadState(path string) (*extract.State, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, StateFile)
	}
	st, err := loadState(path)
	if err == nil && st == nil {
		err = fmt.Errorf("%s: no saved state", path)
	}
	return st, err
}

// Run folds the spans the handler receives until ctx is done, completing
// idle traces and writing checkpoints as it goes; then it folds what is
// left, the traces still open included, and writes the state and the
// model a last time. It returns the error of that last write.
func (r *Receiver) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("receive: Run called twice")
	}
	defer close(r.stopped)
	tick := time.NewTicker(r.opts.tick)
	defer tick.Stop()
	r.lastSave = time.Now()
	for {
		select {
		case spans := <-r.in:
			r.add(spans)
		case f := <-r.calls:
			// What was acknowledged before the call is in its answer.
			r.drain()
			f()
		case now := <-tick.C:
			r.completeIdle(now)
			changed := r.asm.Received() != r.savedAt || r.st.Traces != r.savedTraces
			if now.Sub(r.lastSave) >= r.opts.Checkpoint && changed {
				// A checkpoint that cannot be written (a full disk) is
				// tried again at the next; the last one's error is Run's.
				if err := r.checkpoint(ctx, now, r.st.Traces != r.foldedAt, false); err != nil {
					r.log.Error("checkpoint failed", "error", err)
					r.lastSave = now
				}
			}
			r.refreshStats()
		case <-ctx.Done():
			return r.finish()
		}
	}
}

// add hands spans to the assembler.
func (r *Receiver) add(spans []*ingest.Span) {
	for _, s := range spans {
		// The emit function cannot fail, so neither can Add.
		_ = r.asm.Add(s)
	}
}

// drain adds the batches waiting to be taken.
func (r *Receiver) drain() {
	for {
		select {
		case spans := <-r.in:
			r.add(spans)
		default:
			return
		}
	}
}

// completeIdle completes the traces quiet for Idle, by the marks of how
// many spans had arrived when.
func (r *Receiver) completeIdle(now time.Time) {
	r.marks = append(r.marks, mark{now, r.asm.Received()})
	cut := -1
	for i, m := range r.marks {
		if now.Sub(m.at) >= r.opts.Idle {
			cut = i
		}
	}
	if cut < 0 {
		return
	}
	_ = r.asm.CompleteIdle(r.marks[cut].received)
	r.marks = append(r.marks[:0], r.marks[cut+1:]...)
}

// finish folds every batch handed over, then the traces still open, and
// writes the last checkpoint.
func (r *Receiver) finish() error {
	r.stopping.Store(true)
	wait := time.NewTicker(time.Millisecond)
	defer wait.Stop()
	for r.inflight.Load() > 0 {
		select {
		case spans := <-r.in:
			r.add(spans)
		case <-wait.C:
		}
	}
	r.drain()
	open := r.asm.OpenTraces()
	_ = r.asm.Close()
	if open > 0 {
		r.log.Info("traces still open folded as they are", "traces", open)
	}
	// The last model is made whatever the time it takes: ctx is done.
	err := r.checkpoint(context.Background(), time.Now(), true, true)
	r.refreshStats()
	return err
}

// checkpoint saves the state and, when traces were folded since the last
// model (or always, with withModel), makes and writes the model. The last
// checkpoint (final) makes it from the state itself, which folds nothing
// more; the others from a copy loaded from the bytes just saved, since
// making a model finishes sweeps that folding on needs.
func (r *Receiver) checkpoint(ctx context.Context, now time.Time, withModel, final bool) error {
	var saved bytes.Buffer
	if err := r.st.Save(&saved); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(r.opts.Dir, StateFile), func(w io.Writer) error {
		_, err := w.Write(saved.Bytes())
		return err
	}); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	r.lastSave, r.savedAt, r.savedTraces = now, r.asm.Received(), r.st.Traces
	r.checkpts++
	r.log.Debug("state saved", "traces", r.st.Traces, "open", r.asm.OpenTraces())
	if !withModel || r.st.Traces == 0 {
		return nil
	}
	r.foldedAt = r.st.Traces
	st := r.st
	if !final {
		var err error
		if st, err = extract.LoadState(&saved); err != nil {
			return fmt.Errorf("receive: %w", err)
		}
	}
	m, rep, err := extract.Generate(ctx, st, r.opts.Name, r.opts.Config)
	if ctx.Err() != nil {
		return nil // stopping: the last checkpoint makes the model
	}
	if err != nil {
		// A model that cannot be made (a metrics file unreadable, say) is
		// no reason to stop receiving.
		r.log.Warn("no model made", "error", err)
		return nil
	}
	if err := atomicfile.Write(filepath.Join(r.opts.Dir, ModelFile), func(w io.Writer) error {
		return m.Encode(w, model.YAML)
	}); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(r.opts.Dir, ReportFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	return nil
}

// refreshStats copies Run's counters for Stats.
func (r *Receiver) refreshStats() {
	as := r.asm.Stats()
	r.statsMu.Lock()
	r.stats = Stats{
		Traces: r.st.Traces, OpenTraces: r.asm.OpenTraces(), Checkpoints: r.checkpts,
		LastSave: r.lastSave, Assembly: &as,
	}
	r.statsMu.Unlock()
}

// Stats returns what the receiver has taken in; the folding side's
// figures are as of the last second.
func (r *Receiver) Stats() Stats {
	r.statsMu.Lock()
	s := r.stats
	r.statsMu.Unlock()
	s.Requests, s.BadRequests = r.requests.Load(), r.badRequests.Load()
	s.Spans, s.RejectedSpans = r.spans.Load(), r.rejected.Load()
	return s
}

// Model makes the model of the traces folded so far, every request
// acknowledged before the call taken in. It waits for Run's loop, so it
// fails once Run has returned.
func (r *Receiver) Model(ctx context.Context) (*model.Model, *extract.Report, error) {
	type result struct {
		st  *extract.State
		err error
	}
	done := make(chan result, 1)
	call := func() {
		if r.st.Traces == 0 {
			done <- result{err: ErrNoTraces}
			return
		}
		c, err := r.st.Clone()
		done <- result{c, err}
	}
	select {
	case r.calls <- call:
	case <-r.stopped:
		return nil, nil, ErrStopped
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	res := <-done
	if res.err != nil {
		return nil, nil, res.err
	}
	return extract.Generate(ctx, res.st, r.opts.Name, r.opts.Config)
}

// Errors of Model and of the handler.
var (
	ErrNoTraces = errors.New("no complete trace received yet")
	ErrStopped  = errors.New("the receiver has stopped")
)

// deliver hands decoded spans to Run's loop.
func (r *Receiver) deliver(ctx context.Context, spans []*ingest.Span) error {
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	if r.stopping.Load() {
		return ErrStopped
	}
	select {
	case r.in <- spans:
		return nil
	case <-r.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}
