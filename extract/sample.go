package extract

import (
	"math"

	"github.com/DataDog/sketches-go/ddsketch"
)

// sketchAccuracy is the relative accuracy of the quantile sketches: a
// quantile is reported within 1 % of its true value.
const sketchAccuracy = 0.01

// sketchBins bounds a sketch's memory; beyond it the lowest bins collapse,
// which only blurs values a thousand times below the typical ones.
const sketchBins = 2048

// sample summarizes the values of one quantity (a time, in seconds) in
// constant memory: count, exact moments, and a mergeable quantile sketch.
type sample struct {
	n        int64
	sum, sq  float64
	min, max float64
	sketch   *ddsketch.DDSketch
}

func newSample() *sample {
	s, err := ddsketch.LogCollapsingLowestDenseDDSketch(sketchAccuracy, sketchBins)
	if err != nil {
		panic(err) // constant arguments: cannot fail
	}
	return &sample{sketch: s, min: math.Inf(1), max: math.Inf(-1)}
}

// add records one value; negative values count as zero.
func (s *sample) add(v float64) {
	if !(v > 0) {
		v = 0
	}
	s.n++
	s.sum += v
	s.sq += v * v
	s.min = math.Min(s.min, v)
	s.max = math.Max(s.max, v)
	_ = s.sketch.Add(v)
}

// merge adds the values of o.
func (s *sample) merge(o *sample) {
	if o == nil || o.n == 0 {
		return
	}
	s.n += o.n
	s.sum += o.sum
	s.sq += o.sq
	s.min = math.Min(s.min, o.min)
	s.max = math.Max(s.max, o.max)
	_ = s.sketch.MergeWith(o.sketch)
}

func (s *sample) mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

// variance is the sample variance (n-1 in the denominator).
func (s *sample) variance() float64 {
	if s.n < 2 {
		return 0
	}
	m := s.mean()
	v := (s.sq - float64(s.n)*m*m) / float64(s.n-1)
	return math.Max(v, 0)
}

func (s *sample) cv() float64 {
	m := s.mean()
	if m <= 0 {
		return 0
	}
	return math.Sqrt(s.variance()) / m
}

// quantile returns the q-quantile from the sketch (0 when empty).
func (s *sample) quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	v, err := s.sketch.GetValueAtQuantile(q)
	if err != nil {
		return 0
	}
	return v
}
