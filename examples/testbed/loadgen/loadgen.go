// Package loadgen drives an HTTP system with an open workload (Poisson
// arrivals at a rate) or a closed one (users who think, then send a
// request, then think again), in three phases: ramp-up, steady, ramp-down.
// It records every request's latency on the client side, per request class,
// and summarizes the requests that started in the steady phase: the
// measured truth that predictions are compared with. Merge summarizes
// several runs of one workload together, from the requests each run kept.
package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Class is one kind of request.
type Class struct {
	Name string
	// Weight is the class's share of the requests (relative to the others).
	Weight float64
	// NewRequest builds one request to the system at base (a URL without a
	// trailing slash), drawing what varies from rng.
	NewRequest func(ctx context.Context, rng *rand.Rand, base string) (*http.Request, error)
}

// Phases are the durations of the three phases of a run.
type Phases struct {
	// RampUp: the open rate grows linearly from 0, or users join one by one.
	RampUp time.Duration
	// Steady: full load; only requests that start in it are summarized.
	Steady time.Duration
	// RampDown: the rate falls linearly to 0, or users leave one by one.
	RampDown time.Duration
}

// Total is the length of the whole run.
func (p Phases) Total() time.Duration { return p.RampUp + p.Steady + p.RampDown }

// Config is one run. Exactly one of Rate and Users is positive.
type Config struct {
	BaseURL string
	Classes []Class
	Phases
	// Rate is the open workload's arrival rate in the steady phase, all
	// classes together, per second.
	Rate float64
	// Users is the closed workload's population in the steady phase.
	Users int
	// Think is the mean of a closed user's exponential think time.
	Think time.Duration
	// Seed makes the arrivals, think times and classes reproducible.
	Seed uint64
	// Client sends the requests (default: one with a connection pool large
	// enough for the load and a 30 s timeout).
	Client *http.Client
	// MaxInFlight bounds an open workload's outstanding requests; arrivals
	// beyond it are dropped and counted (default 10000).
	MaxInFlight int
	// KeepRequests makes Result.Requests hold every request that started in
	// the steady phase, so that runs can be merged (see Merge).
	KeepRequests bool
}

// Summary is the client-side view of the steady phase, for one class or
// for all. Times are in seconds.
type Summary struct {
	Count int `json:"count"`
	// Errors counts failed requests (transport errors, status ≥ 400); they
	// are not in the latency figures.
	Errors     int     `json:"errors"`
	Throughput float64 `json:"throughput"`
	Mean       float64 `json:"mean"`
	// MeanCI95 is the half-width of the 95 % confidence interval of Mean
	// by batch means: the steady phase cut into ten equal parts (for a
	// merged result, each run's steady phase cut into ceil(10/runs) equal
	// parts), whose means are nearly independent where neighbouring
	// requests' latencies are not. 0 when fewer than five parts had
	// requests.
	MeanCI95 float64 `json:"mean_ci95,omitempty"`
	P50      float64 `json:"p50"`
	P95      float64 `json:"p95"`
	P99      float64 `json:"p99"`
}

// Result is what Run measured, or what Merge made of several runs.
type Result struct {
	Mode          string              `json:"mode"` // open or closed
	Rate          float64             `json:"rate,omitempty"`
	Users         int                 `json:"users,omitempty"`
	ThinkSeconds  float64             `json:"think,omitempty"`
	SteadySeconds float64             `json:"steady_seconds"`
	Start         time.Time           `json:"start"`
	SteadyStart   time.Time           `json:"steady_start"`
	SteadyEnd     time.Time           `json:"steady_end"`
	Classes       map[string]*Summary `json:"classes"`
	All           *Summary            `json:"all"`
	// Sent counts all requests of the run, every phase.
	Sent int `json:"sent"`
	// Dropped counts open arrivals not sent because MaxInFlight requests
	// were outstanding.
	Dropped int `json:"dropped"`
	// LagMean and LagMax describe how late the generator sent open
	// arrivals against their schedule, in seconds: a generator that falls
	// behind measures a lighter load than the one asked for.
	LagMean float64 `json:"lag_mean"`
	LagMax  float64 `json:"lag_max"`
	// CPUSeconds is the generator's own CPU time over the whole run, when
	// its caller measured it (0 otherwise): what the generator takes from
	// a CPU it shares with the system under test.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// FirstError is the first failure seen, for diagnosis.
	FirstError string `json:"first_error,omitempty"`
	// Requests holds every request that started in the steady phase when
	// Config.KeepRequests was set (nil otherwise), ordered by At, ties by
	// Class, then Latency.
	Requests []Request `json:"requests,omitempty"`
}

// Request is one request that started in the steady phase.
type Request struct {
	// Class is the name of the request's class.
	Class string `json:"class"`
	// At is when the request started, in seconds since the steady phase's
	// start (for a merged result: since the first run's, the steady phases
	// laid end to end).
	At float64 `json:"at"`
	// Latency is the request's duration as the client saw it, in seconds.
	Latency float64 `json:"latency"`
	// Failed is set for a transport error or a status ≥ 400.
	Failed bool `json:"failed,omitempty"`
}

// compareRequests orders requests by At, then Class, then Latency, then
// Failed, so that the order does not depend on when requests completed.
func compareRequests(a, b Request) int {
	return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.Class, b.Class),
		cmp.Compare(a.Latency, b.Latency), compareBool(a.Failed, b.Failed))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// record is one request.
type record struct {
	class   int
	start   time.Duration // since the run's start
	latency time.Duration
	failed  bool
}

// Arrivals returns the arrival times of an open workload, offsets from the
// run's start, for a Poisson process whose rate rises linearly from 0 to
// rate over the ramp-up, stays at rate, and falls linearly to 0 over the
// ramp-down (drawn by thinning a homogeneous process at rate).
func Arrivals(rate float64, p Phases, rng *rand.Rand) []time.Duration {
	if rate <= 0 {
		return nil
	}
	total := p.Total().Seconds()
	up, steady := p.RampUp.Seconds(), p.Steady.Seconds()
	down := p.RampDown.Seconds()
	var out []time.Duration
	for t := rng.ExpFloat64() / rate; t < total; t += rng.ExpFloat64() / rate {
		var f float64
		switch {
		case t < up:
			f = t / up
		case t < up+steady:
			f = 1
		default:
			f = (total - t) / down
		}
		if f >= 1 || rng.Float64() < f {
			out = append(out, time.Duration(t*float64(time.Second)))
		}
	}
	return out
}

// picker draws a class by weight.
type picker []float64

func newPicker(cs []Class) picker {
	cum := make([]float64, len(cs))
	s := 0.0
	for i, c := range cs {
		s += c.Weight
		cum[i] = s
	}
	return cum
}

func (p picker) pick(rng *rand.Rand) int {
	u := rng.Float64() * p[len(p)-1]
	i, _ := slices.BinarySearch(p, u)
	return min(i, len(p)-1)
}

// Run runs the workload and summarizes the steady phase. It stops early,
// with the partial result and ctx.Err(), when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{
			Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute},
			Timeout:   30 * time.Second,
		}
	}
	g := &gen{cfg: cfg, client: client, picker: newPicker(cfg.Classes)}
	g.start = time.Now()
	res := &Result{Start: g.start, Classes: map[string]*Summary{}}
	if cfg.Rate > 0 {
		res.Mode, res.Rate = "open", cfg.Rate
		g.open(ctx, res)
	} else {
		res.Mode, res.Users, res.ThinkSeconds = "closed", cfg.Users, cfg.Think.Seconds()
		g.closed(ctx)
	}
	g.wg.Wait()
	g.summarize(res)
	return res, ctx.Err()
}

func (c *Config) check() error {
	switch {
	case len(c.Classes) == 0:
		return errors.New("loadgen: no request class")
	case (c.Rate > 0) == (c.Users > 0):
		return errors.New("loadgen: give either a rate (open workload) or users (closed workload)")
	case c.Steady <= 0:
		return errors.New("loadgen: the steady phase must be longer than 0")
	case c.RampUp < 0 || c.RampDown < 0 || c.Think < 0:
		return errors.New("loadgen: negative duration")
	}
	for _, cl := range c.Classes {
		if cl.Weight <= 0 || cl.NewRequest == nil || cl.Name == "" {
			return fmt.Errorf("loadgen: class %q needs a name, a positive weight and NewRequest", cl.Name)
		}
	}
	return nil
}

type gen struct {
	cfg    Config
	client *http.Client
	picker picker
	start  time.Time
	wg     sync.WaitGroup

	mu       sync.Mutex
	records  []record
	firstErr string
	dropped  int
	lagSum   time.Duration
	lagMax   time.Duration
	lagN     int
}

// do sends one request of class ci and records it.
func (g *gen) do(ctx context.Context, ci int, rng *rand.Rand) {
	req, err := g.cfg.Classes[ci].NewRequest(ctx, rng, g.cfg.BaseURL)
	begin := time.Now()
	failed := false
	if err == nil {
		var resp *http.Response
		resp, err = g.client.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode >= 400 {
				err = fmt.Errorf("%s %s: status %s", req.Method, req.URL.Path, resp.Status)
			}
		}
	}
	end := time.Now()
	if err != nil {
		failed = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil && g.firstErr == "" && ctx.Err() == nil {
		g.firstErr = err.Error()
	}
	g.records = append(g.records, record{class: ci, start: begin.Sub(g.start), latency: end.Sub(begin), failed: failed})
}

func (g *gen) open(ctx context.Context, res *Result) {
	rng := rand.New(rand.NewPCG(g.cfg.Seed, 0x6f70656e))
	arrivals := Arrivals(g.cfg.Rate, g.cfg.Phases, rng)
	limit := g.cfg.MaxInFlight
	if limit <= 0 {
		limit = 10000
	}
	var inFlight atomic.Int64
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i, a := range arrivals {
		if wait := time.Until(g.start.Add(a)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		lag := max(0, time.Since(g.start.Add(a)))
		ci := g.picker.pick(rng)
		// Each request gets its own source, derived from the schedule's,
		// so that what it draws does not depend on timing.
		reqRng := rand.New(rand.NewPCG(g.cfg.Seed, uint64(i)+1))
		g.mu.Lock()
		g.lagSum += lag
		g.lagMax = max(g.lagMax, lag)
		g.lagN++
		if inFlight.Load() >= int64(limit) {
			g.dropped++
			g.mu.Unlock()
			continue
		}
		g.mu.Unlock()
		inFlight.Add(1)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer inFlight.Add(-1)
			g.do(ctx, ci, reqRng)
		}()
	}
}

func (g *gen) closed(ctx context.Context) {
	n := g.cfg.Users
	for u := range n {
		// User u joins after u/n of the ramp-up and leaves after (u+1)/n of
		// the ramp-down: all are active in the steady phase.
		join := time.Duration(float64(g.cfg.RampUp) * float64(u) / float64(n))
		leave := g.cfg.RampUp + g.cfg.Steady + time.Duration(float64(g.cfg.RampDown)*float64(u+1)/float64(n))
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			rng := rand.New(rand.NewPCG(g.cfg.Seed, 0x75736572+uint64(u)))
			timer := time.NewTimer(0)
			defer timer.Stop()
			<-timer.C
			sleep := func(d time.Duration) bool {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					return false
				case <-timer.C:
					return true
				}
			}
			if !sleep(join) {
				return
			}
			for {
				think := time.Duration(rng.ExpFloat64() * float64(g.cfg.Think))
				if time.Since(g.start)+think >= leave || !sleep(think) {
					return
				}
				g.do(ctx, g.picker.pick(rng), rng)
			}
		}()
	}
}

func (g *gen) summarize(res *Result) {
	steadyFrom, steadyTo := g.cfg.RampUp, g.cfg.RampUp+g.cfg.Steady
	res.SteadySeconds = g.cfg.Steady.Seconds()
	res.SteadyStart, res.SteadyEnd = g.start.Add(steadyFrom), g.start.Add(steadyTo)
	res.Sent, res.Dropped, res.FirstError = len(g.records), g.dropped, g.firstErr
	if g.lagN > 0 {
		res.LagMean = (g.lagSum / time.Duration(g.lagN)).Seconds()
		res.LagMax = g.lagMax.Seconds()
	}
	names := make([]string, len(g.cfg.Classes))
	for i, c := range g.cfg.Classes {
		names[i] = c.Name
	}
	var steady []steadyRequest
	var kept []Request
	for _, r := range g.records {
		if r.start < steadyFrom || r.start >= steadyTo {
			continue
		}
		steady = append(steady, steadyRequest{
			class:   r.class,
			batch:   batchOf(r.start-steadyFrom, g.cfg.Steady, batches),
			latency: r.latency.Seconds(),
			failed:  r.failed,
		})
		if g.cfg.KeepRequests {
			kept = append(kept, Request{
				Class:   names[r.class],
				At:      (r.start - steadyFrom).Seconds(),
				Latency: r.latency.Seconds(),
				Failed:  r.failed,
			})
		}
	}
	res.Classes, res.All = summarizeSteady(names, steady, batches, res.SteadySeconds)
	if g.cfg.KeepRequests {
		slices.SortStableFunc(kept, compareRequests)
		res.Requests = kept
	}
}

// Merge is the result of several runs of the same workload taken together,
// each run with Config.KeepRequests: its summaries are those of all the
// runs' steady-phase requests, as if the steady phases were one, with
// exact percentiles, and MeanCI95 by batch means over each run's steady
// phase cut into ceil(10/len(parts)) equal parts (one run gives the ten
// parts Run uses).
//
// Mode, Rate, Users, ThinkSeconds, Start and SteadyStart are the first
// part's, SteadyEnd is the last part's; SteadySeconds, Sent, Dropped and
// CPUSeconds are sums, LagMean is the mean of the parts' weighted by
// their Sent, LagMax the largest, FirstError the first one a part has.
// The steady phases are not contiguous, so SteadyStart to SteadyEnd is not
// the time measured: callers that need each run's window must keep the
// parts. Requests are the parts' one after another, each part's At offset
// by the SteadySeconds of the parts before it.
//
// Merge fails when there are no parts, a part is nil, a part has steady
// requests in its summary but kept none (it was run without KeepRequests),
// a kept request's class is not among its part's, or the parts differ in
// Mode or in their classes' names. It changes no part.
func Merge(parts ...*Result) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("loadgen: merge: no results to merge")
	}
	var names []string
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("loadgen: merge: part %d of %d is nil", i+1, len(parts))
		}
		if n := p.All.requests(); len(p.Requests) == 0 && n > 0 {
			return nil, fmt.Errorf("loadgen: merge: part %d of %d has %d steady-phase requests but kept none (run it with KeepRequests)", i+1, len(parts), n)
		}
		pn := classNames(p)
		if i == 0 {
			names = pn
			continue
		}
		if p.Mode != parts[0].Mode {
			return nil, fmt.Errorf("loadgen: merge: part %d of %d is a %q run, part 1 a %q one", i+1, len(parts), p.Mode, parts[0].Mode)
		}
		if !slices.Equal(pn, names) {
			return nil, fmt.Errorf("loadgen: merge: part %d of %d has classes %q, part 1 has %q", i+1, len(parts), pn, names)
		}
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	first, last := parts[0], parts[len(parts)-1]
	res := &Result{
		Mode: first.Mode, Rate: first.Rate, Users: first.Users, ThinkSeconds: first.ThinkSeconds,
		Start: first.Start, SteadyStart: first.SteadyStart, SteadyEnd: last.SteadyEnd,
	}
	k := (batches + len(parts) - 1) / len(parts)
	var steady []steadyRequest
	lagSum := 0.0
	for i, p := range parts {
		offset := res.SteadySeconds
		length := secondsToDuration(p.SteadySeconds)
		for j, r := range p.Requests {
			c, ok := index[r.Class]
			if !ok {
				return nil, fmt.Errorf("loadgen: merge: part %d of %d: request %d has class %q, not one of %q", i+1, len(parts), j+1, r.Class, names)
			}
			steady = append(steady, steadyRequest{
				class:   c,
				batch:   i*k + batchOf(secondsToDuration(r.At), length, k),
				latency: r.Latency,
				failed:  r.Failed,
			})
			r.At += offset
			res.Requests = append(res.Requests, r)
		}
		res.SteadySeconds += p.SteadySeconds
		res.Sent += p.Sent
		res.Dropped += p.Dropped
		lagSum += p.LagMean * float64(p.Sent)
		res.LagMax = max(res.LagMax, p.LagMax)
		res.CPUSeconds += p.CPUSeconds
		if res.FirstError == "" {
			res.FirstError = p.FirstError
		}
	}
	if res.Sent > 0 {
		res.LagMean = lagSum / float64(res.Sent)
	}
	slices.SortStableFunc(res.Requests, compareRequests)
	res.Classes, res.All = summarizeSteady(names, steady, len(parts)*k, res.SteadySeconds)
	return res, nil
}

// requests is the number of steady-phase requests s counts, failed or not
// (0 for no summary).
func (s *Summary) requests() int {
	if s == nil {
		return 0
	}
	return s.Count + s.Errors
}

// classNames are the names of r's classes, sorted.
func classNames(r *Result) []string {
	names := make([]string, 0, len(r.Classes))
	for n := range r.Classes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// secondsToDuration is the duration of s seconds, to the nanosecond: the
// inverse of time.Duration.Seconds for any length a run can have.
func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

// batches is the number of equal parts of a run's steady phase whose
// means give the confidence interval of the mean latency.
const batches = 10

// batchOf is the part, of k equal parts of a steady phase of the given
// length, that holds the offset at from its start (the first for a
// phase of no length or a negative offset, the last for an offset beyond
// its end).
func batchOf(at, length time.Duration, k int) int {
	if length <= 0 || at <= 0 {
		return 0
	}
	return min(int(int64(at)*int64(k)/int64(length)), k-1)
}

// steadyRequest is a request that started in the steady phase as the
// summaries see it: its class (an index into the class names), the batch
// it falls in, its latency in seconds and whether it failed.
type steadyRequest struct {
	class, batch int
	latency      float64
	failed       bool
}

// summarizeSteady summarizes the requests of a steady phase lasting the
// given seconds in all, per class (names) and for all classes, with
// MeanCI95 from the given number of batches.
func summarizeSteady(names []string, reqs []steadyRequest, nBatches int, seconds float64) (map[string]*Summary, *Summary) {
	lat := make([][]float64, len(names))
	errs := make([]int, len(names))
	parts := make([]batchMeans, len(names))
	for i := range parts {
		parts[i] = newBatchMeans(nBatches)
	}
	var all []float64
	allParts := newBatchMeans(nBatches)
	allErrs := 0
	for _, r := range reqs {
		if r.failed {
			errs[r.class]++
			allErrs++
			continue
		}
		lat[r.class] = append(lat[r.class], r.latency)
		all = append(all, r.latency)
		parts[r.class].add(r.batch, r.latency)
		allParts.add(r.batch, r.latency)
	}
	classes := make(map[string]*Summary, len(names))
	for i, n := range names {
		classes[n] = summary(lat[i], errs[i], seconds)
		classes[n].MeanCI95 = parts[i].halfWidth()
	}
	total := summary(all, allErrs, seconds)
	total.MeanCI95 = allParts.halfWidth()
	return classes, total
}

// batchMeans sums latencies per part of the steady phase; the zero value
// grows to the parts it is given.
type batchMeans struct {
	sum []float64
	n   []int
}

func newBatchMeans(k int) batchMeans {
	return batchMeans{sum: make([]float64, k), n: make([]int, k)}
}

func (b *batchMeans) add(i int, v float64) {
	if i >= len(b.sum) {
		b.sum = append(b.sum, make([]float64, i+1-len(b.sum))...)
		b.n = append(b.n, make([]int, i+1-len(b.n))...)
	}
	b.sum[i] += v
	b.n[i]++
}

// halfWidth is the 95 % half-width of the mean of the parts' means
// (Student's t with one degree of freedom less than the parts that had
// requests), 0 when fewer than five had.
func (b *batchMeans) halfWidth() float64 {
	var means []float64
	for i := range b.sum {
		if b.n[i] > 0 {
			means = append(means, b.sum[i]/float64(b.n[i]))
		}
	}
	return HalfWidth95(means)
}

// HalfWidth95 is the half-width of the 95 % confidence interval of the
// mean of values taken as independent and alike (batch means, or one
// figure per segment of a run), by Student's t. With fewer than five
// values it is 0: the interval would say little.
func HalfWidth95(values []float64) float64 {
	if len(values) < 5 {
		return 0
	}
	return StudentHalfWidth95(values)
}

// StudentHalfWidth95 is HalfWidth95 for any number of values: NaN with
// fewer than two.
func StudentHalfWidth95(values []float64) float64 {
	k := float64(len(values))
	if k < 2 {
		return math.NaN()
	}
	_, sd := stat.MeanStdDev(values, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k - 1}.Quantile(0.975)
	return t * sd / math.Sqrt(k)
}

func summary(lat []float64, errs int, seconds float64) *Summary {
	s := &Summary{Count: len(lat), Errors: errs}
	if seconds > 0 {
		s.Throughput = float64(len(lat)) / seconds
	}
	if len(lat) == 0 {
		return s
	}
	slices.Sort(lat)
	sum := 0.0
	for _, v := range lat {
		sum += v
	}
	s.Mean = sum / float64(len(lat))
	s.P50, s.P95, s.P99 = Quantile(lat, 0.5), Quantile(lat, 0.95), Quantile(lat, 0.99)
	return s
}

// Quantile is the nearest-rank q-quantile of sorted values (NaN when
// there are none).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
