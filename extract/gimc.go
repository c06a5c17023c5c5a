package extract

import "github.com/perfcast/perfcast/queueing"

// burstyWaitFactor is the mean wait of a GI/M/c queue in mean service
// times, its arrivals' gaps gamma-distributed with squared coefficient of
// variation scv (as the simulator draws an open workload's), at load a
// (busy servers), capped as waitFactor caps it; 0 without load. With
// scv 1 it is waitFactor, Erlang's (queueing.GIMcWait).
//
// Scaling Erlang's wait by GI/M/1's ratio at the load per server, as
// extraction did before, falls short on several cores: at half load and
// scv 4 GI/M/2 waits 8.3 times M/M/2's, GI/M/1 3.4 times M/M/1's.
func burstyWaitFactor(c int, a, scv float64) float64 {
	if a <= 0 || c <= 0 {
		return 0
	}
	return queueing.GIMcWait(c, min(a, loadCap*float64(c)), scv)
}

// burstyServiceWait is the mean wait of a GI/G/c queue in mean service
// times at load a, capped as waitFactor caps it, for service of squared cv
// cs2 (queueing.GIGcWait).
func burstyServiceWait(c int, a, scv, cs2 float64) float64 {
	if a <= 0 || c <= 0 {
		return 0
	}
	return queueing.GIGcWait(c, min(a, loadCap*float64(c)), scv, cs2)
}
