package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// CountKind names the family of a Count.
type CountKind uint8

// The kinds of count distribution.
const (
	CountConst     CountKind = iota // a fixed number
	CountGeometric                  // geometric with a given mean, support from 0 or 1
	CountUniform                    // every integer in [min, max] equally likely
	CountPMF                        // a table of values and probabilities
)

// String returns the name of the kind ("const", "geometric", "uniform", "pmf").
func (k CountKind) String() string {
	switch k {
	case CountConst:
		return "const"
	case CountGeometric:
		return "geometric"
	case CountUniform:
		return "uniform"
	case CountPMF:
		return "pmf"
	}
	return "CountKind(" + strconv.Itoa(int(k)) + ")"
}

// countPMFTolerance is how far from 1 the probabilities of a PMF may sum.
const countPMFTolerance = 1e-6

// Count is a random number of repetitions, for loops: a small value type that
// is cheap to copy and safe to share between goroutines. The zero value is
// the constant 0.
//
// Build one with ParseCount or a constructor; the fields besides Kind are set
// only by this package.
type Count struct {
	// Kind is the family of the distribution.
	Kind CountKind

	n      int     // const: the value; geometric: the least value (0 or 1); uniform: min
	hi     int     // uniform: max
	mean   float64 // geometric: the mean
	lnFail float64 // geometric: ln(1 − q), q the success probability

	pmf *countTable // pmf, behind a pointer to keep Count small
}

// countTable is the immutable table of a PMF count.
type countTable struct {
	vals  []int     // values, increasing
	probs []float64 // probabilities as given
	cum   []float64 // running sums of probs
	last  int       // index of the last positive probability
}

// ConstCount returns the count that is always n. It panics if n < 0.
func ConstCount(n int) Count {
	if n < 0 {
		panic(fmt.Sprintf("model: negative count %d", n))
	}
	return Count{Kind: CountConst, n: n}
}

// countGeometric returns the geometric count with the given finite mean ≥ 0
// whose support starts at from (0 or 1), checking that the mean is at least
// from.
func countGeometric(mean float64, from int) (Count, error) {
	if mean < float64(from) {
		return Count{}, fmt.Errorf("geometric needs mean >= 1 (or min=0 for counts from 0), got %s", strconv.FormatFloat(mean, 'g', -1, 64))
	}
	// Success probability q: mean = from + (1−q)/q, so q = 1/(mean − from + 1).
	q := 1 / (mean - float64(from) + 1)
	return Count{Kind: CountGeometric, n: from, mean: mean, lnFail: math.Log1p(-q)}, nil
}

// countUniform returns the uniform count on the integers lo..hi.
func countUniform(lo, hi int) (Count, error) {
	if lo < 0 || hi < lo {
		return Count{}, fmt.Errorf("uniform count needs 0 <= min <= max, got min %d and max %d", lo, hi)
	}
	return Count{Kind: CountUniform, n: lo, hi: hi}, nil
}

// NewPMF returns the count that is values[i] with probability probs[i].
// Values must be distinct and ≥ 0; probabilities must be finite, ≥ 0 and sum
// to 1 within 1e-6. The inputs are copied and kept sorted by value.
func NewPMF(values []int, probs []float64) (Count, error) {
	if len(values) == 0 {
		return Count{}, errors.New("pmf needs at least one value")
	}
	if len(values) != len(probs) {
		return Count{}, fmt.Errorf("pmf has %d values but %d probabilities", len(values), len(probs))
	}
	idx := make([]int, len(values))
	for i, v := range values {
		if v < 0 {
			return Count{}, fmt.Errorf("pmf value %d is negative", v)
		}
		p := probs[i]
		if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
			return Count{}, fmt.Errorf("pmf probability of %d is %s, want a number in [0, 1]", v, strconv.FormatFloat(p, 'g', -1, 64))
		}
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return values[idx[a]] < values[idx[b]] })
	c := &countTable{vals: make([]int, len(values)), probs: make([]float64, len(values)), cum: make([]float64, len(values))}
	sum := 0.0
	for j, i := range idx {
		c.vals[j], c.probs[j] = values[i], probs[i]
		if j > 0 && c.vals[j] == c.vals[j-1] {
			return Count{}, fmt.Errorf("pmf value %d appears twice", c.vals[j])
		}
		sum += probs[i]
		c.cum[j] = sum
		if probs[i] > 0 {
			c.last = j
		}
	}
	if !(math.Abs(sum-1) <= countPMFTolerance) {
		return Count{}, fmt.Errorf("pmf probabilities sum to %s, want 1 (within 1e-6)", strconv.FormatFloat(sum, 'g', 12, 64))
	}
	return Count{Kind: CountPMF, pmf: c}, nil
}

// Mean returns the mean count.
func (c Count) Mean() float64 {
	switch c.Kind {
	case CountGeometric:
		return c.mean
	case CountUniform:
		return float64(c.n)/2 + float64(c.hi)/2
	case CountPMF:
		total, m := c.pmf.cum[len(c.pmf.cum)-1], 0.0
		for i, v := range c.pmf.vals {
			m += c.pmf.probs[i] / total * float64(v)
		}
		return m
	}
	return float64(c.n)
}

// Prob returns the probability that the count is k.
func (c Count) Prob(k int) float64 {
	switch c.Kind {
	case CountGeometric:
		if k < c.n {
			return 0
		}
		// q·(1−q)^(k−min), q = 1 − e^lnFail.
		return -math.Expm1(c.lnFail) * math.Exp(c.lnFail*float64(k-c.n))
	case CountUniform:
		if k < c.n || k > c.hi {
			return 0
		}
		return 1 / (float64(c.hi) - float64(c.n) + 1)
	case CountPMF:
		i := sort.SearchInts(c.pmf.vals, k)
		if i == len(c.pmf.vals) || c.pmf.vals[i] != k {
			return 0
		}
		return c.pmf.probs[i] / c.pmf.cum[len(c.pmf.cum)-1]
	}
	if k == c.n {
		return 1
	}
	return 0
}

// Var returns the variance of the count.
func (c Count) Var() float64 {
	switch c.Kind {
	case CountGeometric:
		// (1−q)/q² with 1/q = mean − min + 1: the shift does not change it.
		m := c.mean - float64(c.n)
		return m * (m + 1)
	case CountUniform:
		w := float64(c.hi) - float64(c.n) + 1
		return (w*w - 1) / 12
	case CountPMF:
		total, mean, v := c.pmf.cum[len(c.pmf.cum)-1], c.Mean(), 0.0
		for i, x := range c.pmf.vals {
			d := float64(x) - mean
			v += c.pmf.probs[i] / total * d * d
		}
		return v
	}
	return 0
}

// Sample draws a count using r. It does not allocate; it takes constant time
// except for PMF, which takes time logarithmic in the number of values (binary
// search over the running sums of the probabilities).
func (c Count) Sample(r *rand.Rand) int {
	switch c.Kind {
	case CountGeometric:
		// Inversion: the number of failures before the first success is
		// ⌊ln U / ln(1−q)⌋ for U uniform on (0, 1]; when q = 1 (mean == min)
		// ln(1−q) is −Inf and the quotient is 0.
		f := math.Floor(math.Log(1-r.Float64()) / c.lnFail)
		if f >= math.MaxInt-1 {
			return math.MaxInt
		}
		return c.n + int(f)
	case CountUniform:
		return c.n + int(r.Uint64N(uint64(c.hi-c.n)+1))
	case CountPMF:
		lo := distPick(c.pmf.cum, c.pmf.last, r)
		return c.pmf.vals[lo]
	}
	return c.n
}

// PMF returns the values and probabilities of a CountPMF, sorted by value,
// and of a CountConst (its value with probability 1); nil for the other kinds.
// The slices are copies.
func (c Count) PMF() (values []int, probs []float64) {
	switch c.Kind {
	case CountConst:
		return []int{c.n}, []float64{1}
	case CountPMF:
		return append([]int(nil), c.pmf.vals...), append([]float64(nil), c.pmf.probs...)
	}
	return nil, nil
}

// Equal reports whether c and o are the same kind with the same parameters.
func (c Count) Equal(o Count) bool {
	if c.Kind != o.Kind {
		return false
	}
	switch c.Kind {
	case CountGeometric:
		return c.n == o.n && c.mean == o.mean
	case CountUniform:
		return c.n == o.n && c.hi == o.hi
	case CountPMF:
		if len(c.pmf.vals) != len(o.pmf.vals) {
			return false
		}
		for i := range c.pmf.vals {
			if c.pmf.vals[i] != o.pmf.vals[i] || c.pmf.probs[i] != o.pmf.probs[i] {
				return false
			}
		}
		return true
	}
	return c.n == o.n
}

// String returns the form ParseCount reads back to an equal count: "3",
// "geometric(3)", "geometric(2.5, min=0)", "uniform(2, 5)". A PMF, which a
// model writes as an object, is described as "pmf(1: 0.2, 3: 0.8)".
func (c Count) String() string {
	switch c.Kind {
	case CountGeometric:
		s := "geometric(" + strconv.FormatFloat(c.mean, 'g', -1, 64)
		if c.n == 0 {
			s += ", min=0"
		}
		return s + ")"
	case CountUniform:
		return "uniform(" + strconv.Itoa(c.n) + ", " + strconv.Itoa(c.hi) + ")"
	case CountPMF:
		var b strings.Builder
		b.WriteString("pmf(")
		for i, v := range c.pmf.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(v))
			b.WriteString(": ")
			b.WriteString(strconv.FormatFloat(c.pmf.probs[i], 'g', -1, 64))
		}
		return b.String() + ")"
	}
	return strconv.Itoa(c.n)
}

const countHint = `want a whole number, geometric(MEAN), geometric(MEAN, min=0) or uniform(MIN, MAX)`

// ParseCount reads a count distribution:
//
//	3                       always 3
//	geometric(MEAN)         geometric on 1, 2, 3, ... with that mean (≥ 1)
//	geometric(MEAN, min=0)  geometric on 0, 1, 2, ... with that mean (≥ 0)
//	uniform(MIN, MAX)       each integer from MIN to MAX inclusive equally likely
//
// Counts are whole numbers ≥ 0; MEAN may be fractional. Parameters may also be
// named (mean=, min=, max=), positional ones first.
func ParseCount(s string) (Count, error) {
	t := strings.TrimSpace(s)
	open := strings.IndexByte(t, '(')
	if open < 0 {
		n, err := countInt(t)
		if err != nil {
			if t != "" && (t[0] >= 'a' && t[0] <= 'z' || t[0] >= 'A' && t[0] <= 'Z') {
				return Count{}, fmt.Errorf("unknown count %q (%s)", t, countHint)
			}
			return Count{}, fmt.Errorf("invalid count %q: %v (%s)", s, err, countHint)
		}
		return ConstCount(n), nil
	}
	name := strings.TrimSpace(t[:open])
	var sig []string
	switch name {
	case "geometric":
		sig = []string{"mean", "min"}
	case "uniform":
		sig = []string{"min", "max"}
	case "pmf":
		return Count{}, errors.New("a pmf count is written as an object, {pmf: {VALUE: PROBABILITY, ...}}, not as an expression")
	default:
		return Count{}, fmt.Errorf("unknown count distribution %q (%s)", name, countHint)
	}
	if !strings.HasSuffix(t, ")") {
		return Count{}, fmt.Errorf("%s expression %q must end with \")\"", name, s)
	}
	args, err := countArgs(name, t[open+1:len(t)-1], sig)
	if err != nil {
		return Count{}, err
	}
	if name == "geometric" {
		text, ok := args["mean"]
		if !ok {
			return Count{}, errors.New("geometric needs a mean, like geometric(3)")
		}
		mean, err := numParseNonNeg(text, 0)
		if err != nil {
			return Count{}, fmt.Errorf("geometric needs a mean >= 0 written as a number, got %q", text)
		}
		from := 1
		if text, ok := args["min"]; ok {
			if from, err = countInt(text); err != nil || from > 1 {
				return Count{}, fmt.Errorf("geometric min must be 0 or 1, got %q", text)
			}
		}
		return countGeometric(mean, from)
	}
	var bounds [2]int
	for i, key := range sig {
		text, ok := args[key]
		if !ok {
			return Count{}, fmt.Errorf("uniform needs %s, like uniform(2, 5)", key)
		}
		if bounds[i], err = countInt(text); err != nil {
			return Count{}, fmt.Errorf("uniform %s: %v", key, err)
		}
	}
	return countUniform(bounds[0], bounds[1])
}

// countInt reads a whole number ≥ 0.
func countInt(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if err != nil {
		if _, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64); ferr == nil {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return n, nil
}

// countArgs splits the parameters of a count expression into their texts by
// name, positional ones taking the names of sig in order.
func countArgs(name, body string, sig []string) (map[string]string, error) {
	if strings.ContainsAny(body, "()") {
		return nil, fmt.Errorf("%s parameters cannot contain parentheses: %q", name, body)
	}
	args := make(map[string]string, len(sig))
	if strings.TrimSpace(body) == "" {
		return args, nil
	}
	named := false
	for i, part := range strings.Split(body, ",") {
		part = strings.TrimSpace(part)
		key, text := "", part
		if eq := strings.IndexByte(part, '='); eq >= 0 {
			named = true
			key, text = strings.TrimSpace(part[:eq]), strings.TrimSpace(part[eq+1:])
			known := false
			for _, k := range sig {
				known = known || k == key
			}
			if !known {
				return nil, fmt.Errorf("%s has no parameter %q (want %s)", name, key, strings.Join(sig, ", "))
			}
		} else {
			if named {
				return nil, fmt.Errorf("%s: positional parameter %q after a named one", name, part)
			}
			if i >= len(sig) {
				return nil, fmt.Errorf("%s takes at most %d parameters (%s)", name, len(sig), strings.Join(sig, ", "))
			}
			key = sig[i]
		}
		if _, dup := args[key]; dup {
			return nil, fmt.Errorf("%s parameter %s given twice", name, key)
		}
		args[key] = text
	}
	return args, nil
}
