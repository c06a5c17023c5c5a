package metrics

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
)

// maxLine is the longest CSV line read; longer ones are damage.
const maxLine = 1 << 16

// csv reads the CSV format: a header naming the columns timestamp, host
// and cpu_utilization or cpu_seconds (in any order, optionally cores,
// service, the service.name of the process measured, cpu_limit, the
// host's CPU limit in cores or millicores, empty for none, and
// cpu_period, its period as a duration), then one reading per line. Fields may be quoted with double quotes; empty
// lines and lines starting with # are skipped.
func (r *reader) csv(data []byte) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	lineNo := 0
	var cols map[string]int
	var kind trackKind
	var unit Unit
	var valueCol string
	byHost := map[string]*track{}
	var order []*track
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		lineNo++
		line = bytes.TrimRight(line, "\r")
		text := strings.TrimSpace(string(line))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if len(line) > maxLine {
			r.damagef(ingest.DamageUnparseable, "line %d: longer than %d bytes", lineNo, maxLine)
			continue
		}
		fields := splitCSV(text)
		if cols == nil {
			cols = map[string]int{}
			for i, f := range fields {
				cols[strings.ToLower(f)] = i
			}
			_, hasT := cols["timestamp"]
			_, hasH := cols["host"]
			_, hasU := cols["cpu_utilization"]
			_, hasS := cols["cpu_seconds"]
			if !hasT || !hasH || hasU == hasS {
				return fmt.Errorf("%s:%d: header %q: want timestamp,host,cpu_utilization or timestamp,host,cpu_seconds", r.name, lineNo, abbrev(text))
			}
			if hasU {
				kind, unit, valueCol = gauge, Fraction, "cpu_utilization"
			} else {
				kind, unit, valueCol = counter, Cores, "cpu_seconds"
			}
			continue
		}
		field := func(name string) (string, bool) {
			i, ok := cols[name]
			if !ok || i >= len(fields) {
				return "", false
			}
			return fields[i], true
		}
		ts, ok1 := field("timestamp")
		host, ok2 := field("host")
		val, ok3 := field(valueCol)
		if !ok1 || !ok2 || !ok3 {
			r.damagef(ingest.DamageUnparseable, "line %d: %d fields, header has %d", lineNo, len(fields), len(cols))
			continue
		}
		t, err := parseTime(ts)
		if err != nil {
			r.damagef(ingest.DamageMissingTime, "line %d: timestamp %q: %v", lineNo, abbrev(ts), err)
			continue
		}
		if host == "" {
			r.damagef(DamageNoHost, "line %d: empty host", lineNo)
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			r.damagef(ingest.DamageUnparseable, "line %d: %s %q is not a number", lineNo, valueCol, abbrev(val))
			continue
		}
		if !finite(v) {
			r.damagef(ingest.DamageBadValue, "line %d: %s %v", lineNo, valueCol, v)
			continue
		}
		if unit == Fraction && v > maxUtilization {
			r.damagef(ingest.DamageBadValue, "line %d: cpu_utilization %v above 1 (a fraction of all cores is expected, not a percentage)", lineNo, v)
			continue
		}
		if c, ok := field("cores"); ok && c != "" {
			n, err := strconv.Atoi(c)
			if err != nil || n <= 0 || n > maxCores {
				r.damagef(ingest.DamageBadValue, "line %d: cores %q", lineNo, abbrev(c))
				continue
			}
			if r.explicitCores == nil {
				r.explicitCores = map[string]int{}
			}
			r.explicitCores[host] = max(r.explicitCores[host], n)
		}
		service, _ := field("service")
		if !r.csvLimit(lineNo, host, service, t, field) {
			continue
		}
		key := host + "\x00" + service
		tr := byHost[key]
		if tr == nil {
			tr = &track{host: host, kind: kind, unit: unit, source: valueCol + " of " + host}
			if service != "" {
				// A process of the host: machine-wide readings win.
				tr.service, tr.family = service, 1
				tr.source += " (" + service + ")"
			}
			byHost[key] = tr
			order = append(order, tr)
		}
		tr.points = append(tr.points, point{t: t, v: v})
	}
	if cols == nil {
		return fmt.Errorf("%s: no header line", r.name)
	}
	r.tracks = append(r.tracks, order...)
	return nil
}

// csvLimit records the cpu_limit and cpu_period fields of a line, if any;
// it reports false, counting the damage, when one is unreadable.
func (r *reader) csvLimit(lineNo int, host, service string, t int64, field func(string) (string, bool)) bool {
	source := "cpu_limit of " + host
	if l, ok := field("cpu_limit"); ok && l != "" {
		v, err := model.ParseCores(l)
		if err != nil {
			r.damagef(ingest.DamageBadValue, "line %d: cpu_limit: %v", lineNo, err)
			return false
		}
		r.addLimit(host, service, limitCores, t, v, source)
		if p, ok := field("cpu_period"); ok && p != "" {
			d, err := model.ParseDuration(p)
			if err != nil || !(d > 0) {
				r.damagef(ingest.DamageBadValue, "line %d: cpu_period %q is not a positive duration", lineNo, abbrev(p))
				return false
			}
			r.addLimit(host, service, limitPeriod, t, d, source)
		}
	}
	return true
}

// maxUtilization is the largest utilization accepted: a little above one
// allows for the rounding and jitter of measurements.
const maxUtilization = 1.05

// splitCSV splits one line at commas, removing the double quotes around
// a field (a doubled quote inside stands for one).
func splitCSV(line string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '"' && quoted && i+1 < len(line) && line[i+1] == '"':
			b.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(b.String()))
}

// Timestamps accepted: from 1970 to the year 2200.
const maxUnixSeconds = 7258118400

// parseTime reads Unix seconds (with a fraction) or RFC 3339, into Unix
// nanoseconds.
func parseTime(s string) (int64, error) {
	if ns, ok := parseDecimalSeconds(s); ok {
		if ns <= 0 || ns/1e9 > maxUnixSeconds {
			return 0, fmt.Errorf("out of range as Unix seconds")
		}
		return ns, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if !(f > 0) || f > maxUnixSeconds {
			return 0, fmt.Errorf("out of range as Unix seconds")
		}
		sec, frac := math.Modf(f)
		return int64(sec)*1e9 + int64(math.Round(frac*1e9)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("neither Unix seconds nor RFC 3339")
	}
	if t.Unix() <= 0 || t.Unix() > maxUnixSeconds {
		return 0, fmt.Errorf("out of range")
	}
	return t.UnixNano(), nil
}

// parseDecimalSeconds reads digits[.digits] exactly, to the nanosecond
// (further digits are cut off).
func parseDecimalSeconds(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 11 || len(frac) > 30 {
		return 0, false
	}
	var sec, ns int64
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		sec = sec*10 + int64(c-'0')
	}
	scale := int64(1e8)
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
		ns += int64(c-'0') * scale
		scale /= 10
	}
	return sec*1e9 + ns, true
}

// abbrev shortens a quoted piece of input for a message.
func abbrev(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
