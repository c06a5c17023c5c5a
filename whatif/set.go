// Package whatif changes models for comparative questions: --set assignments
// of dotted keys, sweeps over ranges of values, and capacity searches.
package whatif

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/perfcast/perfcast/model"
)

// field is one settable property of a named entity.
type field struct {
	// suffix follows the entity's name in a key, e.g. "cpu.cores".
	suffix string
	set    func(m *model.Model, name, value string) error
}

// section is a part of the model whose entries have settable fields.
type section struct {
	prefix string
	// noun and plural name one entry and the lot, pattern shows how a
	// key names one (after the prefix), all for messages.
	noun, plural, pattern string
	// names lists the entries, as keys name them between the prefix and
	// a field.
	names func(m *model.Model) []string
	// match tells whether a key's name (possibly with `*`) picks an
	// entry; nil: the name itself or `*`.
	match  func(pattern, name string) bool
	fields []field
}

// notApplicable says that an entry does not have a field (the open rate
// of a closed workload): a `*` key passes over such entries.
type notApplicable string

func (e notApplicable) Error() string { return string(e) }

// diskSep separates a host's name from its disk's in a key.
const diskSep = ".disks."

// matchDisk matches a disk's key name, HOST.disks.DISK, either part of it
// possibly `*`.
func matchDisk(pattern, name string) bool {
	ph, pd, ok := cutLast(pattern, diskSep)
	if !ok {
		return false
	}
	nh, nd, _ := cutLast(name, diskSep)
	return (ph == "*" || ph == nh) && (pd == "*" || pd == nd)
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// disk returns the disk a key's name (HOST.disks.DISK) names.
func disk(m *model.Model, name string) *model.Disk {
	h, d, _ := cutLast(name, diskSep)
	return m.Host(h).Disk(d)
}

func intValue(value string, min int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil {
		return 0, fmt.Errorf("want a whole number, not %q", value)
	}
	if n < min {
		return 0, fmt.Errorf("must be at least %d, not %d", min, n)
	}
	return n, nil
}

func floatValue(value string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || !(f > 0) {
		return 0, fmt.Errorf("want a positive number, not %q", value)
	}
	return f, nil
}

var sections = []section{
	{
		prefix: "hosts", noun: "host", plural: "hosts", pattern: "NAME",
		names: func(m *model.Model) []string {
			var out []string
			for _, h := range m.Hosts {
				out = append(out, h.Name)
			}
			return out
		},
		fields: []field{
			{"replicas", func(m *model.Model, n, v string) (err error) {
				m.Host(n).Replicas, err = intValue(v, 1)
				return
			}},
			{"balancer", func(m *model.Model, n, v string) error {
				m.Host(n).Balancer = model.Balancer(v)
				return nil
			}},
			{"cpu.cores", func(m *model.Model, n, v string) (err error) {
				m.Host(n).CPU.Cores, err = intValue(v, 1)
				return
			}},
			{"cpu.speed", func(m *model.Model, n, v string) (err error) {
				m.Host(n).CPU.Speed, err = floatValue(v)
				return
			}},
			{"cpu.speed_variation", func(m *model.Model, n, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || !(f >= 0) {
					return fmt.Errorf("want a number of at least 0, not %q", v)
				}
				m.Host(n).CPU.SpeedVariation = f
				return nil
			}},
			{"cpu.speed_window", func(m *model.Model, n, v string) (err error) {
				m.Host(n).CPU.SpeedWindow, err = model.ParseDuration(v)
				return
			}},
			{"cpu.scheduling", func(m *model.Model, n, v string) error {
				m.Host(n).CPU.Scheduling = model.Scheduling(v)
				return nil
			}},
			{"cpu.quantum", func(m *model.Model, n, v string) (err error) {
				m.Host(n).CPU.Quantum, err = model.ParseDuration(v)
				return
			}},
			{"cpu.limit", func(m *model.Model, n, v string) (err error) {
				m.Host(n).CPU.Limit, err = model.ParseCores(v)
				return
			}},
			{"cpu.period", func(m *model.Model, n, v string) (err error) {
				m.Host(n).CPU.Period, err = model.ParseDuration(v)
				return
			}},
		},
	},
	{
		prefix: "hosts", noun: "disk", plural: "disks", pattern: "NAME" + diskSep + "DISK",
		names: func(m *model.Model) []string {
			var out []string
			for _, h := range m.Hosts {
				for _, d := range h.Disks {
					out = append(out, h.Name+diskSep+d.Name)
				}
			}
			return out
		},
		match: matchDisk,
		fields: []field{
			{"servers", func(m *model.Model, n, v string) (err error) {
				disk(m, n).Servers, err = intValue(v, 1)
				return
			}},
			{"scheduling", func(m *model.Model, n, v string) error {
				disk(m, n).Scheduling = model.Scheduling(v)
				return nil
			}},
		},
	},
	{
		prefix: "components", noun: "component", plural: "components", pattern: "NAME",
		names: func(m *model.Model) []string {
			var out []string
			for _, c := range m.Components {
				out = append(out, c.Name)
			}
			return out
		},
		fields: []field{
			{"threads", func(m *model.Model, n, v string) (err error) {
				if v == "unlimited" {
					m.Component(n).Threads = model.Unlimited
					return nil
				}
				m.Component(n).Threads, err = intValue(v, 1)
				return
			}},
			{"queue", func(m *model.Model, n, v string) (err error) {
				if v == "unlimited" {
					m.Component(n).Queue = model.QueueUnlimited
					return nil
				}
				m.Component(n).Queue, err = intValue(v, 0)
				return
			}},
			{"on_full", func(m *model.Model, n, v string) error {
				m.Component(n).OnFull = model.OnFull(v)
				return nil
			}},
			{"host", func(m *model.Model, n, v string) error {
				m.Component(n).Host = v
				return nil
			}},
		},
	},
	{
		prefix: "passive", noun: "passive resource", plural: "passive", pattern: "NAME",
		names: func(m *model.Model) []string {
			var out []string
			for _, p := range m.Passive {
				out = append(out, p.Name)
			}
			return out
		},
		fields: []field{
			{"capacity", func(m *model.Model, n, v string) (err error) {
				m.PassiveResource(n).Capacity, err = intValue(v, 1)
				return
			}},
			{"partitioned", func(m *model.Model, n, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("want true or false, found %q", v)
				}
				m.PassiveResource(n).Partitioned = b
				return nil
			}},
		},
	},
	{
		prefix: "workload", noun: "workload", plural: "workload", pattern: "NAME",
		names: func(m *model.Model) []string {
			var out []string
			for _, w := range m.Workloads {
				out = append(out, w.Name)
			}
			return out
		},
		fields: []field{
			{"open.rate", func(m *model.Model, n, v string) error {
				w := m.Workload(n)
				if w.Open == nil {
					return notApplicable("workload " + n + " is closed")
				}
				r, err := model.ParseRate(v)
				w.Open.Rate = r
				return err
			}},
			{"open.cv", func(m *model.Model, n, v string) error {
				w := m.Workload(n)
				if w.Open == nil {
					return notApplicable("workload " + n + " is closed")
				}
				var err error
				w.Open.CV, err = floatValue(v)
				return err
			}},
			{"closed.users", func(m *model.Model, n, v string) error {
				w := m.Workload(n)
				if w.Closed == nil {
					return notApplicable("workload " + n + " is open")
				}
				var err error
				w.Closed.Users, err = intValue(v, 0)
				return err
			}},
			{"closed.think", func(m *model.Model, n, v string) error {
				w := m.Workload(n)
				if w.Closed == nil {
					return notApplicable("workload " + n + " is open")
				}
				var err error
				w.Closed.Think, err = model.ParseDist(v)
				return err
			}},
			{"load", func(m *model.Model, n, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || !(f >= 0) {
					return fmt.Errorf("want a factor ≥ 0, not %q", v)
				}
				return Scale(m.Workload(n), f)
			}},
		},
	},
}

// Scale multiplies a workload's load by f: the rate of an open workload, the
// population of a closed one (rounded to whole users). A population beyond
// model.MaxUsers is an error.
func Scale(w *model.Workload, f float64) error {
	if w.Open != nil {
		w.Open.Rate *= f
	}
	if w.Closed != nil {
		u := float64(w.Closed.Users)*f + 0.5
		if u > model.MaxUsers+1 {
			return fmt.Errorf("workload %s: %.4g users are more than perfcast solves (at most %d)", w.Name, math.Floor(u), model.MaxUsers)
		}
		w.Closed.Users = int(u)
	}
	return nil
}

// Set applies one assignment `KEY=VALUE` to the model. KEY is a dotted path
// such as `hosts.app.cpu.cores` or `workload.*.load`, where `*` stands for
// every name of the section. A key that names nothing is an error that lists
// what exists. The model is not validated: call Validate after the last Set.
func Set(m *model.Model, assignment string) error {
	key, value, ok := strings.Cut(assignment, "=")
	if !ok {
		return fmt.Errorf("--set %q: want KEY=VALUE", assignment)
	}
	return SetKey(m, strings.TrimSpace(key), strings.TrimSpace(value))
}

// SetKey sets one key to a value; see Set.
func SetKey(m *model.Model, key, value string) error {
	var settable []string
	known := false
	for _, sec := range sections {
		rest, ok := strings.CutPrefix(key, sec.prefix+".")
		if !ok {
			continue
		}
		known = true
		for _, f := range sec.fields {
			settable = append(settable, sec.prefix+"."+sec.pattern+"."+f.suffix)
			pattern, ok := strings.CutSuffix(rest, "."+f.suffix)
			if !ok || (sec.match != nil && !strings.Contains(pattern, diskSep)) {
				continue
			}
			match := sec.match
			if match == nil {
				match = func(p, n string) bool { return p == "*" || p == n }
			}
			names := sec.names(m)
			var targets []string
			for _, n := range names {
				if match(pattern, n) {
					targets = append(targets, n)
				}
			}
			if len(targets) == 0 && pattern != "*" {
				return fmt.Errorf("%s: no %s named %q (%s: %s)", key, sec.noun, pattern, sec.plural, listOrNone(names))
			}
			var skipped error
			set := 0
			for _, n := range targets {
				err := f.set(m, n, value)
				var na notApplicable
				if errors.As(err, &na) && strings.Contains(pattern, "*") {
					skipped = err
					continue
				}
				if err != nil {
					return fmt.Errorf("%s=%s: %w", key, value, err)
				}
				set++
			}
			if set == 0 && skipped != nil {
				return fmt.Errorf("%s=%s: no %s has it (%w)", key, value, sec.noun, skipped)
			}
			return nil
		}
	}
	if known {
		return fmt.Errorf("%s: unknown key (settable: %s)", key, strings.Join(settable, ", "))
	}
	var prefixes []string
	for _, s := range sections {
		if !slices.Contains(prefixes, s.prefix) {
			prefixes = append(prefixes, s.prefix)
		}
	}
	return fmt.Errorf("%s: unknown key; keys start with %s", key, strings.Join(prefixes, ", "))
}

// Keys lists every settable key of the model, for help and error messages.
func Keys(m *model.Model) []string {
	var out []string
	for _, sec := range sections {
		for _, n := range sec.names(m) {
			for _, f := range sec.fields {
				out = append(out, sec.prefix+"."+n+"."+f.suffix)
			}
		}
	}
	sort.Strings(out)
	return out
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
