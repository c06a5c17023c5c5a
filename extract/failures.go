package extract

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/perfcast/perfcast/internal/textout"
)

// failedShare is the share of an operation's executions failed (span
// status error) from which extraction warns that the model takes them
// with the successes.
const failedShare = 0.01

// warnFailures names the operations of which a noticeable share of
// executions failed. The model has no notion of failure: an operation's
// time, demand and calls are those of its failures and successes
// together, so failures that return early make it look faster than it is
// when it works, and failures that wait out a timeout slower.
func (g *generator) warnFailures() {
	type share struct {
		id    string
		share float64
	}
	var shares []share
	var failed, total int64
	for _, id := range slices.Sorted(maps.Keys(g.s.ops)) {
		op := g.s.ops[id]
		failed, total = failed+op.errors, total+op.count
		if op.count > 0 && float64(op.errors) >= failedShare*float64(op.count) {
			shares = append(shares, share{id, float64(op.errors) / float64(op.count)})
		}
	}
	if failed == 0 {
		return
	}
	if len(shares) == 0 {
		g.rep.evidencef("%d of %d executions failed (span status error), none of an operation's %.0f %% or more: taken with the successes", failed, total, 100*failedShare)
		return
	}
	slices.SortStableFunc(shares, func(a, b share) int { return cmp.Compare(b.share, a.share) })
	names := make([]string, len(shares))
	for i, s := range shares {
		names[i] = fmt.Sprintf("%s %.3g %%", s.id, 100*s.share)
	}
	g.rep.warnf("failed executions (span status error) are modeled with the successes (%s of each one's failed): a failure that returns early makes an operation look faster than it is when it works, one that waits out a timeout slower",
		textout.Abbreviate(names, 10))
}
