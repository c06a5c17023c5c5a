package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// jaegerTrace is one trace of Jaeger's JSON model.
type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string         `json:"traceID"`
	SpanID        string         `json:"spanID"`
	ParentSpanID  string         `json:"parentSpanID"` // older exports
	OperationName string         `json:"operationName"`
	References    []jaegerRef    `json:"references"`
	StartTime     json.Number    `json:"startTime"` // microseconds
	Duration      json.Number    `json:"duration"`  // microseconds
	Tags          []jaegerTag    `json:"tags"`
	ProcessID     string         `json:"processID"`
	Process       *jaegerProcess `json:"process"`
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"`
}

type jaegerTag struct {
	Key   string          `json:"key"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// value converts a tag value by its declared type, or by its JSON form.
func (t *jaegerTag) value() value {
	raw := bytes.TrimSpace(t.Value)
	if len(raw) == 0 {
		return value{kind: valOther}
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return value{kind: valOther}
		}
		switch t.Type {
		case "int64":
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return value{kind: valInt, i: i}
			}
		case "float64":
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return value{kind: valDouble, f: f}
			}
		case "bool":
			if b, err := strconv.ParseBool(s); err == nil {
				return value{kind: valBool, b: b}
			}
		}
		return value{kind: valString, s: s}
	case 't', 'f':
		return value{kind: valBool, b: raw[0] == 't'}
	case '{', '[', 'n':
		return value{kind: valOther, s: string(raw)}
	}
	if t.Type != "float64" {
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return value{kind: valInt, i: i}
		}
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return value{kind: valDouble, f: f}
	}
	return value{kind: valOther, s: string(raw)}
}

// jaegerDecoder reads {"data": [trace, ...], ...} one trace at a time, or a
// single bare trace object.
type jaegerDecoder struct {
	dec     *json.Decoder
	k       *sink
	inData  bool // inside the data array
	done    bool
	bare    bool   // a bare trace object rather than {"data": [...]}
	pending string // the first key of a bare trace, already read
}

func newJaegerDecoder(br *bufio.Reader, k *sink) *jaegerDecoder {
	dec := json.NewDecoder(br)
	dec.UseNumber()
	return &jaegerDecoder{dec: dec, k: k}
}

func (d *jaegerDecoder) decode() error {
	if d.done {
		return io.EOF
	}
	if !d.inData && !d.bare {
		if err := d.enter(); err != nil {
			return err
		}
	}
	if d.bare {
		return d.decodeBare()
	}
	if !d.dec.More() {
		if _, err := d.dec.Token(); err != nil { // ]
			return d.fail(err)
		}
		d.inData = false
		return d.skipRest()
	}
	at := d.dec.InputOffset()
	var t jaegerTrace
	if err := d.dec.Decode(&t); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			d.k.damagef(DamageUnparseable, "%s: byte %d: %v", d.k.file, at, err)
			return nil
		}
		return d.fail(err)
	}
	d.convert(&t)
	return nil
}

// enter reads up to the data array, skipping other keys.
func (d *jaegerDecoder) enter() error {
	if tok, err := d.dec.Token(); err != nil {
		return d.fail(err)
	} else if tok != json.Delim('{') {
		return d.fail(errors.New("expected an object"))
	}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return d.fail(err)
		}
		key, _ := tok.(string)
		switch key {
		case "data":
			tok, err := d.dec.Token()
			if err != nil {
				return d.fail(err)
			}
			if tok == nil { // "data": null
				continue
			}
			if tok != json.Delim('[') {
				return d.fail(errors.New(`"data" is not an array`))
			}
			d.inData = true
			return nil
		case "traceID", "spans", "processes":
			d.bare = true
			d.pending = key
			return nil
		}
		var skip json.RawMessage
		if err := d.dec.Decode(&skip); err != nil {
			return d.fail(err)
		}
	}
	d.done = true
	return io.EOF
}

// skipRest consumes the keys after the data array.
func (d *jaegerDecoder) skipRest() error {
	for d.dec.More() {
		if _, err := d.dec.Token(); err != nil {
			return d.fail(err)
		}
		var skip json.RawMessage
		if err := d.dec.Decode(&skip); err != nil {
			return d.fail(err)
		}
	}
	if _, err := d.dec.Token(); err != nil { // }
		return d.fail(err)
	}
	d.done = true
	return io.EOF
}

// decodeBare reads the rest of a bare trace object whose first key was read.
func (d *jaegerDecoder) decodeBare() error {
	var t jaegerTrace
	key := d.pending
	for {
		var err error
		switch key {
		case "traceID":
			err = d.dec.Decode(&t.TraceID)
		case "spans":
			err = d.dec.Decode(&t.Spans)
		case "processes":
			err = d.dec.Decode(&t.Processes)
		default:
			var skip json.RawMessage
			err = d.dec.Decode(&skip)
		}
		if err != nil {
			return d.fail(err)
		}
		if !d.dec.More() {
			break
		}
		tok, err := d.dec.Token()
		if err != nil {
			return d.fail(err)
		}
		key, _ = tok.(string)
	}
	if _, err := d.dec.Token(); err != nil { // }
		return d.fail(err)
	}
	d.convert(&t)
	d.done = true
	return nil
}

func (d *jaegerDecoder) fail(err error) error {
	d.done = true
	return jsonDamage(d.k, d.dec, err)
}

func (d *jaegerDecoder) convert(t *jaegerTrace) {
	a := d.k.attrs
	procs := make(map[string]*Span, len(t.Processes))
	for id, p := range t.Processes {
		procs[id] = d.process(&p)
	}
	for i := range t.Spans {
		js := &t.Spans[i]
		res := procs[js.ProcessID]
		if js.Process != nil {
			res = d.process(js.Process)
		}
		if res == nil {
			res = &Span{}
		}
		sp := d.k.newSpan()
		sp.Name = a.in.str(js.OperationName)
		traceHex := js.TraceID
		if traceHex == "" {
			traceHex = t.TraceID
		}
		var err1, err2, err3 error
		sp.TraceID, err1 = ParseTraceID(traceHex)
		sp.SpanID, err2 = ParseSpanID(js.SpanID)
		if js.ParentSpanID != "" && js.ParentSpanID != "0" {
			sp.ParentID, err3 = ParseSpanID(js.ParentSpanID)
		}
		if err1 != nil || err2 != nil || err3 != nil {
			d.k.damagef(DamageMissingID, "%s: span %q: missing or malformed id", d.k.file, js.OperationName)
			continue
		}
		d.references(sp, js.References)
		setTimes(sp, js.StartTime, js.Duration)
		sp.setResource(res)
		var st spanState
		for j := range js.Tags {
			tag := &js.Tags[j]
			k, ix := a.classify(tag.Key)
			if k != keyNone && !isResourceKey(k) {
				a.apply(sp, &st, k, tag.value())
			}
			if ix >= 0 {
				a.keep(sp, ix, tag.value())
			}
		}
		for _, e := range res.Extra {
			if _, ok := sp.Lookup(e.Key); !ok {
				a.keep(sp, a.extraIx[e.Key], value{s: e.Value})
			}
		}
		finishTags(sp, &st)
		d.k.push(sp, &st)
	}
}

// references picks the parent and the links among a span's references: the
// first CHILD_OF in the same trace is the parent, else the first
// FOLLOWS_FROM in the same trace (marked FollowsFrom); every other reference
// is a link.
func (d *jaegerDecoder) references(sp *Span, refs []jaegerRef) {
	parent := -1
	if sp.ParentID.IsZero() {
		for pass := 0; pass < 2 && parent < 0; pass++ {
			want := "CHILD_OF"
			if pass == 1 {
				want = "FOLLOWS_FROM"
			}
			for i, r := range refs {
				if r.RefType != want && !(want == "CHILD_OF" && r.RefType == "") {
					continue
				}
				tid, err := ParseTraceID(r.TraceID)
				if r.TraceID != "" && (err != nil || tid != sp.TraceID) {
					continue
				}
				sid, err := ParseSpanID(r.SpanID)
				if err != nil || sid.IsZero() {
					continue
				}
				sp.ParentID = sid
				sp.FollowsFrom = pass == 1
				parent = i
				break
			}
		}
	}
	for i, r := range refs {
		if i == parent {
			continue
		}
		tid, err1 := ParseTraceID(r.TraceID)
		sid, err2 := ParseSpanID(r.SpanID)
		if r.TraceID == "" {
			tid, err1 = sp.TraceID, nil
		}
		if err1 != nil || err2 != nil || sid.IsZero() {
			continue
		}
		if tid == sp.TraceID && sid == sp.ParentID {
			continue
		}
		sp.Links = append(sp.Links, Link{TraceID: tid, SpanID: sid})
	}
}

// process converts a Jaeger process into the resource part of a span.
func (d *jaegerDecoder) process(p *jaegerProcess) *Span {
	a := d.k.attrs
	res := &Span{Service: a.in.str(p.ServiceName)}
	for i := range p.Tags {
		tag := &p.Tags[i]
		k, ix := a.classify(tag.Key)
		if k != keyNone && isResourceKey(k) {
			a.apply(res, nil, k, tag.value())
		}
		if ix >= 0 {
			a.keep(res, ix, tag.value())
		}
	}
	return res
}
