// Package loadgen drives an HTTP system with an open workload (Poisson
// arrivals at a rate) or a closed one (users who think, then send a
// request, then think again), in three phases: ramp-up, steady, ramp-down.
// It records every request's latency on the client side, per request class,
// and summarizes the requests that started in the steady phase: the
// measured truth that predictions are compared with.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
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
	// by batch means: the steady phase cut into ten equal parts, whose
	// means are nearly independent where neighbouring requests' latencies
	// are not. 0 when fewer than five parts had requests.
	MeanCI95 float64 `json:"mean_ci95,omitempty"`
	P50      float64 `json:"p50"`
	P95      float64 `json:"p95"`
	P99      float64 `json:"p99"`
}

// Result is what Run measured.
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
	lat := make([][]float64, len(g.cfg.Classes))
	errs := make([]int, len(g.cfg.Classes))
	parts := make([]batchMeans, len(g.cfg.Classes))
	var all []float64
	var allParts batchMeans
	allErrs := 0
	for _, r := range g.records {
		if r.start < steadyFrom || r.start >= steadyTo {
			continue
		}
		if r.failed {
			errs[r.class]++
			allErrs++
			continue
		}
		b := min(int(int64(r.start-steadyFrom)*batches/int64(g.cfg.Steady)), batches-1)
		lat[r.class] = append(lat[r.class], r.latency.Seconds())
		all = append(all, r.latency.Seconds())
		parts[r.class].add(b, r.latency.Seconds())
		allParts.add(b, r.latency.Seconds())
	}
	for i, c := range g.cfg.Classes {
		res.Classes[c.Name] = summary(lat[i], errs[i], res.SteadySeconds)
		res.Classes[c.Name].MeanCI95 = parts[i].halfWidth()
	}
	res.All = summary(all, allErrs, res.SteadySeconds)
	res.All.MeanCI95 = allParts.halfWidth()
}

// batches is the number of equal parts of the steady phase whose means
// give the confidence interval of the mean latency.
const batches = 10

// batchMeans sums latencies per part of the steady phase.
type batchMeans struct {
	sum [batches]float64
	n   [batches]int
}

func (b *batchMeans) add(i int, v float64) {
	b.sum[i] += v
	b.n[i]++
}

// halfWidth is the 95 % half-width of the mean of the parts' means
// (Student's t with one degree of freedom less than the parts that had
// requests), 0 when fewer than five had.
func (b *batchMeans) halfWidth() float64 {
	var means []float64
	for i := range batches {
		if b.n[i] > 0 {
			means = append(means, b.sum[i]/float64(b.n[i]))
		}
	}
	k := float64(len(means))
	if k < 5 {
		return 0
	}
	_, sd := stat.MeanStdDev(means, nil)
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
