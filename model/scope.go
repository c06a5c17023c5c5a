package model

import "slices"

// ScopeHolds returns steps with every acquire and release of one resource
// that stand in one list, with nothing acquired or released between them,
// made a hold of the steps between: the same behavior, in the form whose
// holding time a solver can see whole. Pairs are taken innermost first,
// so that nested pairs of different resources both become holds; an
// acquire whose release lies in another list, or whose units differ, is
// left as it is. Steps are copied, never changed in place.
func ScopeHolds(steps []Step) []Step {
	return RewriteLists(steps, scopeList)
}

// scopeList makes holds of the acquire–release pairs of one list, as
// ScopeHolds describes.
func scopeList(list []Step) []Step {
	for {
		i, j := innermostPair(list)
		if i < 0 {
			return list
		}
		a := list[i]
		hold := Step{Kind: StepHold, Resource: a.Resource, Units: max(a.Units, 1), Steps: slices.Clone(list[i+1 : j])}
		list = slices.Concat(list[:i], []Step{hold}, list[j+1:])
	}
}

// innermostPair finds in list an acquire at i and a release of the same
// resource and units at j with no acquire or release between them; -1,
// -1 where there is none.
func innermostPair(list []Step) (i, j int) {
	last := -1 // the latest acquire with nothing acquired or released since
	for k, s := range list {
		switch s.Kind {
		case StepAcquire:
			last = k
		case StepRelease:
			if last >= 0 && list[last].Resource == s.Resource && max(list[last].Units, 1) == max(s.Units, 1) {
				return last, k
			}
			last = -1
		}
	}
	return -1, -1
}
