package extract_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/tracegen"
)

// TestBalancerFromStarts extracts knownModel, whose front end runs on two
// replicas, with its balancer round-robin (the model's default), random
// and least-busy: each replica's spans start with gaps of squared cv near
// 0.5 under turns and near 1 at random, and a balancer by load sends the
// calls that came while the replica next in turn was the busier to the
// other. On three replicas, the lighter of two drawn at random sends
// them to a least loaded replica as often as the draws hold one. The
// extracted host has the truth's balancer, with evidence.
func TestBalancerFromStarts(t *testing.T) {
	for _, tc := range []struct {
		b        model.Balancer
		replicas int
	}{{model.RoundRobin, 2}, {model.Random, 2}, {model.LeastBusy, 2}, {model.LeastOfTwo, 3}} {
		b := tc.b
		t.Run(string(b), func(t *testing.T) {
			text := strings.Replace(knownModel, "web: {replicas: 2, cpu: {cores: 1}}", fmt.Sprintf("web: {replicas: %d, balancer: %s, cpu: {cores: 1}}", tc.replicas, b), 1)
			if text == knownModel {
				t.Fatal("the model's front end host is not as expected")
			}
			_, _, tracesPath, _ := recordModel(t, text, "known", tracegen.Options{Seed: 3}, 20000, nil)
			x, err := extractRun(context.Background(), []string{tracesPath}, "known", extractConfig)
			if err != nil {
				t.Fatal(err)
			}
			h := x.Model.Host("front")
			if h == nil || h.Replicas != tc.replicas {
				t.Fatalf("host front %+v", h)
			}
			t.Logf("evidence: %q", x.Report.Evidence)
			if h.Balancer != b {
				t.Errorf("balancer %s, truth %s", h.Balancer, b)
			}
			if mentions(x.Report.Evidence, "host front: of ") != 1 {
				t.Errorf("no evidence of the replicas' load as calls came")
			}
			if gaps := mentions(x.Report.Evidence, "host front: each replica's spans start with gaps of squared cv"); gaps != 1 && b != model.LeastBusy && b != model.LeastOfTwo {
				t.Errorf("no evidence of the gaps between the replicas' spans")
			}
		})
	}
}
