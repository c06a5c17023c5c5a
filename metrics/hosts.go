package metrics

import (
	"maps"
	"slices"
	"strings"
)

// Lookup returns the host, a key of s.Series or s.Services, that name
// names: the host of that name, else the one that has it as an alias (a
// container's name or id; see Set.Aliases), else the one that has it
// ignoring case, else the only one whose first dot-separated label is
// name's (web-1 for web-1.example.com). It returns "" when none does, or
// when the last rule finds several.
func (s *Set) Lookup(name string) string {
	if s == nil || name == "" {
		return ""
	}
	if s.Series[name] != nil || s.Services[name] != nil {
		return name
	}
	if h, ok := s.Aliases[name]; ok {
		return h
	}
	// Every name a host is known by, with its host, in a fixed order.
	type known struct{ name, host string }
	var all []known
	for _, h := range slices.Sorted(maps.Keys(s.Series)) {
		all = append(all, known{h, h})
	}
	for _, h := range slices.Sorted(maps.Keys(s.Services)) {
		if s.Series[h] == nil {
			all = append(all, known{h, h})
		}
	}
	for _, a := range slices.Sorted(maps.Keys(s.Aliases)) {
		all = append(all, known{a, s.Aliases[a]})
	}
	for _, k := range all {
		if strings.EqualFold(k.name, name) {
			return k.host
		}
	}
	short := func(h string) string {
		h, _, _ = strings.Cut(strings.ToLower(h), ".")
		return h
	}
	found := ""
	for _, k := range all {
		if short(k.name) == short(name) && k.host != found {
			if found != "" {
				return "" // ambiguous
			}
			found = k.host
		}
	}
	return found
}

// addAlias records that alias names host, unless it is a host itself or
// names another host too (then it names none).
func (s *Set) addAlias(alias, host string) {
	if alias == "" || alias == host {
		return
	}
	if s.Aliases == nil {
		s.Aliases = map[string]string{}
	}
	if prev, ok := s.Aliases[alias]; ok && prev != host {
		s.Aliases[alias] = "" // ambiguous
		return
	}
	s.Aliases[alias] = host
}

// dropAmbiguousAliases removes the aliases that name several hosts, and
// those that are hosts' own names.
func (s *Set) dropAmbiguousAliases() {
	for a, h := range s.Aliases {
		if h == "" || s.Series[a] != nil || s.Services[a] != nil {
			delete(s.Aliases, a)
		}
	}
	if len(s.Aliases) == 0 {
		s.Aliases = nil
	}
}

// containerIDs returns the names a container id goes by: the id as given,
// and, for a 64-digit hexadecimal id (Docker's, containerd's), its first 12
// digits, which Docker gives the container as its host name. A cgroup path
// (/docker/ID, /system.slice/docker-ID.scope, .../cri-containerd-ID.scope)
// or a Kubernetes containerd://ID is reduced to its id first.
func containerIDs(id string) []string {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	id = strings.TrimSuffix(id, ".scope")
	if i := strings.LastIndexByte(id, '-'); i >= 0 && isHex(id[i+1:]) {
		id = id[i+1:] // docker-ID, cri-containerd-ID, crio-ID
	}
	if id == "" {
		return nil
	}
	if len(id) == 64 && isHex(id) {
		return []string{id, id[:12]}
	}
	return []string{id}
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Sum returns the series of host that adds up series, all in busy cores:
// the CPU of a machine from its containers', say. Over each stretch of
// time it is the sum where every series that has begun and not yet ended
// covers the stretch. It returns nil when a series is not in busy cores or
// none is given.
func Sum(host string, series []*Series) *Series {
	if len(series) == 0 {
		return nil
	}
	var tracks [][]Sample
	var sources []string
	for _, s := range series {
		if s == nil || s.Unit != Cores {
			return nil
		}
		tracks = append(tracks, s.Samples)
		sources = append(sources, s.Source)
	}
	if len(series) == 1 {
		s := *series[0]
		s.Host = host
		return &s
	}
	slices.Sort(sources)
	return &Series{Host: host, Unit: Cores, Samples: sumTracks(tracks), Source: strings.Join(slices.Compact(sources), " + ")}
}
