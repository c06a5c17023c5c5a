package mva

import (
	"math"
	"testing"
)

// buzen computes the throughput of a single-class closed network by the
// convolution algorithm with load-dependent stations, independently of MVA:
// G(n) = Σ_j F_k(j)·G_{k−1}(n−j) with F_k(j) = D^j / Π_{i≤j} min(i, s) for s
// servers, D^j/j! for a delay (think time included as a delay station).
// Demands are scaled by `scale` to keep G in range; X(N) = G(N−1)/G(N)·scale.
func buzen(stations []station, d []float64, think float64, N int) float64 {
	type st struct {
		s int
		d float64
	}
	var list []st
	for k, s := range stations {
		for range s.copies {
			list = append(list, st{s.servers, d[k]})
		}
	}
	if think > 0 {
		list = append(list, st{0, think})
	}
	// Scale so that the bottleneck's per-server demand is 1.
	scale := 0.0
	for _, x := range list {
		if x.s > 0 {
			scale = math.Max(scale, x.d/float64(x.s))
		}
	}
	if scale == 0 {
		scale = think / float64(N)
	}
	g := make([]float64, N+1)
	g[0] = 1
	for _, x := range list {
		f := make([]float64, N+1)
		f[0] = 1
		for j := 1; j <= N; j++ {
			rate := float64(j)
			if x.s > 0 {
				rate = float64(min(j, x.s))
			}
			f[j] = f[j-1] * x.d / scale / rate
		}
		ng := make([]float64, N+1)
		if x.s == 0 {
			for n := 0; n <= N; n++ {
				var sum float64
				for j := 0; j <= n; j++ {
					sum += f[j] * g[n-j]
				}
				ng[n] = sum
			}
		} else {
			// F(j) = F(s)·(D/s)^(j−s) beyond s servers: the terms j ≥ s of
			// the convolution sum obey tail(n) = F(s)·G(n−s) + (D/s)·tail(n−1).
			var tail float64
			for n := 0; n <= N; n++ {
				var sum float64
				for j := 0; j < x.s && j <= n; j++ {
					sum += f[j] * g[n-j]
				}
				if n >= x.s {
					tail = f[x.s]*g[n-x.s] + x.d/scale/float64(x.s)*tail
					sum += tail
				}
				ng[n] = sum
			}
		}
		g = ng
	}
	return g[N-1] / g[N] / scale
}

func relErr(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1e-300) }

func TestExactSingleMatchesConvolution(t *testing.T) {
	stations := []station{
		{name: "a", servers: 1, copies: 1},
		{name: "b", servers: 4, copies: 1},
		{name: "c", servers: 2, copies: 3},
		{name: "d", servers: 0, copies: 1},
		{name: "e", servers: 16, copies: 1},
	}
	d := []float64{0.010, 0.030, 0.004, 0.050, 0.090}
	for _, N := range []int{1, 2, 5, 17, 60, 200} {
		for _, think := range []float64{0, 0.5} {
			cn := &closedNet{stations: stations, users: []float64{float64(N)}, think: []float64{think}, demand: [][]float64{d}}
			got := cn.exactSingle()
			want := buzen(stations, d, think, N)
			if math.IsNaN(want) || math.IsInf(want, 0) {
				t.Fatalf("reference out of range")
			}
			if e := relErr(got.X[0], want); e > 1e-9 {
				t.Errorf("N=%d Z=%g: X = %.12g, convolution %.12g (rel. error %.2g)", N, think, got.X[0], want, e)
			}
			// Little's law over the whole cycle.
			cycle := think
			for k, s := range stations {
				cycle += float64(s.copies) * got.R[0][k]
			}
			if e := relErr(got.X[0]*cycle, float64(N)); e > 1e-9 {
				t.Errorf("N=%d: X·cycle = %g", N, got.X[0]*cycle)
			}
		}
	}
}

func TestExactSingleLargePopulation(t *testing.T) {
	// N = 10 000 against the convolution algorithm, with a multi-server
	// bottleneck whose idle probability underflows.
	stations := []station{
		{name: "cpu", servers: 4, copies: 1},
		{name: "disk", servers: 1, copies: 1},
		{name: "pool", servers: 8, copies: 2},
		{name: "net", servers: 0, copies: 1},
	}
	d := []float64{0.040, 0.008, 0.060, 0.020}
	for _, tc := range []struct {
		N     int
		think float64
	}{{10000, 0}, {3000, 5}} {
		N, think := tc.N, tc.think
		if testing.Short() {
			N /= 5
		}
		cn := &closedNet{stations: stations, users: []float64{float64(N)}, think: []float64{think}, demand: [][]float64{d}}
		got := cn.exactSingle()
		want := buzen(stations, d, think, N)
		if math.IsNaN(want) || math.IsInf(want, 0) {
			t.Fatalf("reference out of range")
		}
		if e := relErr(got.X[0], want); e > 1e-6 || math.IsNaN(got.X[0]) {
			t.Errorf("Z=%g: X = %.12g, convolution %.12g (rel. error %.2g)", think, got.X[0], want, e)
		}
		for k, r := range got.R[0] {
			if math.IsNaN(r) || r < 0 {
				t.Errorf("R[%d] = %g", k, r)
			}
		}
	}
}

// enumerate computes class throughputs of a small multi-class closed
// product-form network by listing every state: the probability of a state
// is proportional to Π_k f_k(n_k), with f_k = |n|!/Π n_c! · Π D_ck^n_c /
// Π_{j≤|n|} min(j, s) at a queueing station and Π D_ck^n_c/n_c! at a delay.
// X_c = G(N − e_c)/G(N).
func enumerate(stations []station, d [][]float64, think []float64, N []int) []float64 {
	C := len(N)
	// Think times as one more delay station.
	st := append(append([]station(nil), stations...), station{servers: 0, copies: 1})
	dd := make([][]float64, C)
	for c := range dd {
		dd[c] = append(append([]float64(nil), d[c]...), think[c])
	}
	g := func(pop []int) float64 {
		// Sum over distributions of each class's customers across stations.
		K := len(st)
		alloc := make([][]int, K)
		for k := range alloc {
			alloc[k] = make([]int, C)
		}
		var rec func(c, k, left int) float64
		weight := func() float64 {
			w := 1.0
			for k := 0; k < K; k++ {
				tot := 0
				for c := 0; c < C; c++ {
					n := alloc[k][c]
					tot += n
					for i := 1; i <= n; i++ {
						w *= dd[c][k] / float64(i)
					}
				}
				if st[k].servers > 0 {
					for j := 1; j <= tot; j++ {
						w *= float64(j) / float64(min(j, st[k].servers))
					}
				}
			}
			return w
		}
		rec = func(c, k, left int) float64 {
			if c == C {
				return weight()
			}
			if k == K-1 {
				alloc[k][c] = left
				v := rec(c+1, 0, pop[min(c+1, C-1)]*boolInt(c+1 < C))
				alloc[k][c] = 0
				return v
			}
			var s float64
			for n := 0; n <= left; n++ {
				alloc[k][c] = n
				s += rec(c, k+1, left-n)
			}
			alloc[k][c] = 0
			return s
		}
		return rec(0, 0, pop[0])
	}
	gN := g(N)
	x := make([]float64, C)
	for c := range x {
		if N[c] == 0 {
			continue
		}
		less := append([]int(nil), N...)
		less[c]--
		x[c] = g(less) / gN
	}
	return x
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestExactMultiMatchesEnumeration(t *testing.T) {
	stations := []station{
		{name: "a", servers: 1, copies: 1},
		{name: "b", servers: 3, copies: 1},
		{name: "c", servers: 0, copies: 1},
		{name: "d", servers: 2, copies: 1},
	}
	d := [][]float64{
		{0.02, 0.09, 0.05, 0.03},
		{0.05, 0.02, 0.00, 0.06},
		{0.01, 0.04, 0.10, 0.02},
	}
	think := []float64{0.2, 0, 0.5}
	for _, N := range [][]int{{1, 1, 1}, {3, 2, 0}, {4, 3, 2}, {2, 5, 3}} {
		users := make([]float64, len(N))
		for c := range N {
			users[c] = float64(N[c])
		}
		cn := &closedNet{stations: stations, users: users, think: think, demand: d}
		got := cn.exactMulti()
		want := enumerate(stations, d, think, N)
		for c := range N {
			if e := relErr(got.X[c], want[c]); N[c] > 0 && e > 1e-9 {
				t.Errorf("N=%v class %d: X = %.12g, enumeration %.12g (rel. error %.2g)", N, c, got.X[c], want[c], e)
			}
		}
	}
}

func TestExactMultiWithOneClassIsExactSingle(t *testing.T) {
	stations := []station{{servers: 1, copies: 2}, {servers: 5, copies: 1}, {servers: 0, copies: 1}}
	d := [][]float64{{0.02, 0.2, 0.1}}
	cn := &closedNet{stations: stations, users: []float64{40}, think: []float64{1}, demand: d}
	a, b := cn.exactMulti(), cn.exactSingle()
	if e := relErr(a.X[0], b.X[0]); e > 1e-12 {
		t.Errorf("X multi %.15g single %.15g", a.X[0], b.X[0])
	}
}

// TestSchweitzerError checks approximate MVA against exact MVA on
// networks where both run, within the error the documentation states.
func TestSchweitzerError(t *testing.T) {
	stations := []station{
		{name: "a", servers: 1, copies: 1},
		{name: "b", servers: 4, copies: 1},
		{name: "c", servers: 0, copies: 1},
		{name: "d", servers: 2, copies: 2},
	}
	d := [][]float64{
		{0.02, 0.09, 0.05, 0.03},
		{0.05, 0.02, 0.00, 0.06},
		{0.01, 0.04, 0.10, 0.02},
	}
	think := []float64{0.2, 0.1, 0.5}
	worstX, worstR := 0.0, 0.0
	// Also with open requests sharing the servers of b and d.
	shared := []*sharedServers{nil, newSharedServers(4, 0.4), nil, newSharedServers(2, 0.3)}
	for _, c := range []struct {
		N      []int
		shared bool
	}{{[]int{1, 1, 1}, false}, {[]int{5, 5, 5}, false}, {[]int{10, 2, 8}, false}, {[]int{20, 20, 20}, false}, {[]int{40, 10, 30}, false}, {[]int{1, 5, 5}, true}, {[]int{20, 20, 20}, true}} {
		N := c.N
		var rates []*sharedServers
		if c.shared {
			rates = shared
		}
		users := []float64{float64(N[0]), float64(N[1]), float64(N[2])}
		cn := &closedNet{stations: stations, users: users, think: think, demand: d, shared: rates}
		ex := cn.exactMulti()
		ap := cn.schweitzer(1e-12, 100000)
		if !ap.converged {
			t.Fatalf("N=%v: approximate MVA did not converge", N)
		}
		for c := range N {
			worstX = math.Max(worstX, relErr(ap.X[c], ex.X[c]))
			re := users[c]/ap.X[c] - think[c]
			rx := users[c]/ex.X[c] - think[c]
			worstR = math.Max(worstR, relErr(re, rx))
		}
	}
	t.Logf("approximate MVA: worst relative error X %.3g, R %.3g", worstX, worstR)
	if worstX > 0.08 || worstR > 0.12 {
		t.Errorf("approximate MVA error X %.3g, R %.3g beyond the documented 8 %% / 12 %%", worstX, worstR)
	}
}
