package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
)

// zipkinSpan is a Zipkin v2 span as JSON. Every field but the ids is
// optional.
type zipkinSpan struct {
	TraceID        string            `json:"traceId"`
	ID             string            `json:"id"`
	ParentID       string            `json:"parentId"`
	Name           string            `json:"name"`
	Kind           string            `json:"kind"`
	Timestamp      json.Number       `json:"timestamp"` // microseconds
	Duration       json.Number       `json:"duration"`  // microseconds
	LocalEndpoint  *zipkinEndpoint   `json:"localEndpoint"`
	RemoteEndpoint *zipkinEndpoint   `json:"remoteEndpoint"`
	Tags           map[string]string `json:"tags"`
	Shared         bool              `json:"shared"`
}

type zipkinEndpoint struct {
	ServiceName string `json:"serviceName"`
	IPv4        string `json:"ipv4"`
	IPv6        string `json:"ipv6"`
}

// zipkinDecoder reads a JSON array of Zipkin spans, or an array of such
// arrays (one per trace), one span at a time.
type zipkinDecoder struct {
	dec   *json.Decoder
	k     *sink
	depth int // open arrays: 1 inside the top array, 2 inside a trace array
	done  bool
	zs    zipkinSpan
}

func newZipkinDecoder(br *bufio.Reader, k *sink) *zipkinDecoder {
	dec := json.NewDecoder(br)
	dec.UseNumber()
	return &zipkinDecoder{dec: dec, k: k}
}

func (d *zipkinDecoder) decode() error {
	if d.done {
		return io.EOF
	}
	if d.depth == 0 {
		if err := d.expectDelim('['); err != nil {
			return err
		}
		d.depth = 1
	}
	for n := 0; n < 64; n++ {
		if !d.dec.More() {
			// Consume the closing bracket (or find the input cut).
			if _, err := d.dec.Token(); err != nil {
				return d.fail(err)
			}
			d.depth--
			if d.depth == 0 {
				d.done = true
				return io.EOF
			}
			continue
		}
		if d.depth == 1 && d.peek() == '[' {
			if err := d.expectDelim('['); err != nil {
				return err
			}
			d.depth = 2
			continue
		}
		at := d.dec.InputOffset()
		d.zs = zipkinSpan{}
		if err := d.dec.Decode(&d.zs); err != nil {
			if elementError(err) {
				// The element was read whole; only its content is wrong.
				d.k.damagef(DamageUnparseable, "%s: byte %d: %v", d.k.file, at, err)
				continue
			}
			return d.fail(err)
		}
		d.convert(&d.zs)
	}
	return nil
}

// peek returns the first byte of the next JSON value, or 0 when unknown.
func (d *zipkinDecoder) peek() byte {
	var b [64]byte
	n, _ := d.dec.Buffered().Read(b[:])
	rest := bytes.TrimLeft(b[:n], " \t\r\n,")
	if len(rest) > 0 {
		return rest[0]
	}
	return 0
}

func (d *zipkinDecoder) expectDelim(want json.Delim) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.fail(err)
	}
	if tok != want {
		d.k.damagef(DamageUnparseable, "%s: byte %d: expected %q, found %v", d.k.file, d.dec.InputOffset(), string(want), tok)
		d.done = true
		return io.EOF
	}
	return nil
}

// fail records a decoding error that ends the input.
func (d *zipkinDecoder) fail(err error) error {
	d.done = true
	return jsonDamage(d.k, d.dec, err)
}

// elementError reports whether a Decode error concerns only the content of
// a value the decoder has read whole (a wrong type, a malformed number), so
// that decoding can go on with the next value.
func elementError(err error) bool {
	var syn *json.SyntaxError
	return !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF && !errors.As(err, &syn)
}

// jsonDamage classifies a json.Decoder error as truncation or garbage.
func jsonDamage(k *sink, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF:
		k.damagef(DamageTruncated, "%s: byte %d: input ends inside a JSON value", k.file, dec.InputOffset())
	case errors.As(err, &syn):
		k.damagef(DamageUnparseable, "%s: byte %d: %v", k.file, max(syn.Offset-1, 0), err)
	default:
		k.damagef(DamageTruncated, "%s: byte %d: %v", k.file, dec.InputOffset(), err)
	}
	return io.EOF
}

// micros parses a JSON number of microseconds into nanoseconds. ok is false
// when the number is absent, malformed or out of range; it may be negative.
func micros(n json.Number) (ns int64, ok bool) {
	if n == "" {
		return 0, false
	}
	const limit = math.MaxInt64 / 1000
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if v > limit || v < -limit {
			return 0, false
		}
		return v * 1000, true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || !(f <= limit && f >= -limit) {
		return 0, false
	}
	return int64(math.Round(f * 1000)), true
}

// setTimes sets Start and End from microsecond start and duration; a span
// without either keeps zero times and is counted as missing_time.
func setTimes(sp *Span, start, dur json.Number) {
	s, ok1 := micros(start)
	d, ok2 := micros(dur)
	if !ok1 || !ok2 || s <= 0 {
		return
	}
	sp.Start = s
	if d > 0 && s > math.MaxInt64-d {
		sp.Start = 0
		return
	}
	sp.End = s + d
}

func (d *zipkinDecoder) convert(z *zipkinSpan) {
	a := d.k.attrs
	sp := d.k.newSpan()
	sp.Name = a.in.str(z.Name)
	var err1, err2, err3 error
	sp.TraceID, err1 = ParseTraceID(z.TraceID)
	sp.SpanID, err2 = ParseSpanID(z.ID)
	if z.ParentID != "" {
		sp.ParentID, err3 = ParseSpanID(z.ParentID)
	}
	if err1 != nil || err2 != nil || err3 != nil {
		d.k.damagef(DamageMissingID, "%s: span %q: missing or malformed id", d.k.file, z.Name)
		return
	}
	sp.Kind = kindFromTag(z.Kind)
	setTimes(sp, z.Timestamp, z.Duration)
	sp.Shared = z.Shared
	if e := z.LocalEndpoint; e != nil {
		sp.Service = a.in.str(e.ServiceName)
	}
	var st spanState
	for key, v := range z.Tags {
		k, ix := a.classify(key)
		if k != keyNone {
			a.apply(sp, &st, k, value{kind: valString, s: v})
		}
		if ix >= 0 {
			a.keep(sp, ix, value{kind: valString, s: v})
		}
	}
	if e := z.LocalEndpoint; e != nil && sp.Host == "" {
		if e.IPv4 != "" {
			sp.Host = a.in.str(e.IPv4)
		} else {
			sp.Host = a.in.str(e.IPv6)
		}
	}
	if e := z.RemoteEndpoint; e != nil && sp.PeerService == "" {
		sp.PeerService = a.in.str(e.ServiceName)
	}
	finishTags(sp, &st)
	d.k.push(sp, &st)
}
