package ingest

import (
	"fmt"
	"maps"
	"slices"
)

// DamageKind names one kind of damage found in the input.
type DamageKind string

// Kinds of damage. Readers report the first six; the assembler the rest.
const (
	DamageUnparseable      DamageKind = "unparseable"       // a line, message or element that does not decode
	DamageTruncated        DamageKind = "truncated"         // input that ends in the middle of a message
	DamageMissingID        DamageKind = "missing_id"        // a span without a valid trace or span id
	DamageMissingTime      DamageKind = "missing_time"      // a span without start or end time
	DamageNegativeDuration DamageKind = "negative_duration" // a span that ends before it starts
	DamageBadValue         DamageKind = "bad_value"         // a known attribute with a value of the wrong type
	DamageDuplicateSpan    DamageKind = "duplicate_span"    // a second span with the same id in one trace
	DamageOrphan           DamageKind = "orphan"            // a span whose parent is not in its trace
	DamageCycle            DamageKind = "cycle"             // spans whose parent links form a loop
	DamageSplitTrace       DamageKind = "split_trace"       // spans of a trace that arrived after it was complete
)

// maxSamples is how many messages are kept per kind of damage.
const maxSamples = 5

// Damage counts what was skipped or repaired, by kind, and keeps the first
// few messages of each kind, each naming its place. The zero value is ready
// to use.
type Damage struct {
	Counts  map[DamageKind]int64    `json:"counts,omitempty"`
	Samples map[DamageKind][]string `json:"samples,omitempty"`
}

// Add counts one occurrence of kind; msg says where and what, in one line.
func (d *Damage) Add(kind DamageKind, msg string) {
	if d.Counts == nil {
		d.Counts = make(map[DamageKind]int64)
		d.Samples = make(map[DamageKind][]string)
	}
	d.Counts[kind]++
	if len(d.Samples[kind]) < maxSamples && msg != "" {
		d.Samples[kind] = append(d.Samples[kind], msg)
	}
}

// Merge adds the counts and samples of o to d.
func (d *Damage) Merge(o Damage) {
	for _, k := range o.Kinds() {
		if d.Counts == nil {
			d.Counts = make(map[DamageKind]int64)
			d.Samples = make(map[DamageKind][]string)
		}
		d.Counts[k] += o.Counts[k]
		for _, m := range o.Samples[k] {
			if len(d.Samples[k]) < maxSamples {
				d.Samples[k] = append(d.Samples[k], m)
			}
		}
	}
}

// Total is the number of damage occurrences of all kinds.
func (d Damage) Total() int64 {
	var n int64
	for _, c := range d.Counts {
		n += c
	}
	return n
}

// Kinds returns the kinds with a count, sorted by name.
func (d Damage) Kinds() []DamageKind {
	return slices.Sorted(maps.Keys(d.Counts))
}

// Addf is Add with a message formatted only while samples are still kept.
func (d *Damage) Addf(kind DamageKind, format string, args ...any) {
	var msg string
	if len(d.Samples[kind]) < maxSamples {
		msg = fmt.Sprintf(format, args...)
	}
	d.Add(kind, msg)
}
