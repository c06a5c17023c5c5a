package shop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/examples/testbed/loadgen"
)

// The request classes the load generator sends to the gateway.
const (
	ClassBrowse    = "browse"    // GET /catalog/{category}
	ClassRecommend = "recommend" // GET /recommend/{user}
	ClassOrder     = "order"     // POST /orders
)

// EntryOperations maps each class to the gateway operation it enters by,
// as perfcast names it (component/operation).
var EntryOperations = map[string]string{
	ClassBrowse:    "gateway/GET /catalog/{category}",
	ClassRecommend: "gateway/GET /recommend/{user}",
	ClassOrder:     "gateway/POST /orders",
}

// DefaultMix is the testbed's request mix.
var DefaultMix = map[string]float64{ClassBrowse: 6, ClassRecommend: 2, ClassOrder: 2}

// ParseMix reads a mix written as "browse=6,recommend=2,order=2".
func ParseMix(s string) (map[string]float64, error) {
	mix := map[string]float64{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		w, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("mix %q: want class=weight,... with weights ≥ 0", s)
		}
		if _, known := EntryOperations[k]; !known {
			return nil, fmt.Errorf("mix %q: unknown class %q (browse, recommend, order)", s, k)
		}
		mix[k] = w
	}
	return mix, nil
}

// FormatMix writes a mix as ParseMix reads it, classes in order.
func FormatMix(mix map[string]float64) string {
	keys := slices.Sorted(maps.Keys(mix))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(mix[k], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Classes returns the load generator's classes for a mix over a shop of
// the given size; classes of weight 0 are left out.
func Classes(mix map[string]float64, size Size) []loadgen.Class {
	var out []loadgen.Class
	for _, name := range slices.Sorted(maps.Keys(mix)) {
		w := mix[name]
		if w <= 0 {
			continue
		}
		c := loadgen.Class{Name: name, Weight: w}
		switch name {
		case ClassBrowse:
			c.NewRequest = func(ctx context.Context, rng *rand.Rand, base string) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/catalog/%d", base, rng.IntN(Categories)), nil)
			}
		case ClassRecommend:
			c.NewRequest = func(ctx context.Context, rng *rand.Rand, base string) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/recommend/user%d", base, 1+rng.IntN(size.Customers)), nil)
			}
		case ClassOrder:
			c.NewRequest = func(ctx context.Context, rng *rand.Rand, base string) (*http.Request, error) {
				o := Order{Customer: 1 + rng.IntN(size.Customers)}
				for range 1 + rng.IntN(4) {
					o.Items = append(o.Items, OrderItem{Product: 1 + rng.IntN(size.Products), Qty: 1 + rng.IntN(3)})
				}
				body, _ := json.Marshal(o)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/orders", bytes.NewReader(body))
				if err == nil {
					req.Header.Set("Content-Type", "application/json")
				}
				return req, err
			}
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}
