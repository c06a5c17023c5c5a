package ingest

import (
	"errors"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// wireDecoder converts an OTLP ExportTraceServiceRequest from protobuf wire
// format straight into Spans. It reads only the fields perfcast keeps,
// without building the whole message: ids are copied, names and attribute
// values interned from the input bytes. A request that does not decode is
// rejected whole, as a full unmarshal would.
type wireDecoder struct {
	k       *sink
	pending []*Span
	states  []spanState
}

var errWire = errors.New("malformed protobuf")

// wireField reads one field: its number, type, and for length-delimited
// fields the contents; n is the bytes consumed, negative on error.
func wireField(b []byte) (num protowire.Number, typ protowire.Type, val []byte, u uint64, n int) {
	num, typ, tl := protowire.ConsumeTag(b)
	if tl < 0 {
		return 0, 0, nil, 0, tl
	}
	b = b[tl:]
	var l int
	switch typ {
	case protowire.BytesType:
		val, l = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		u, l = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		u, l = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, l = protowire.ConsumeFixed32(b)
		u = uint64(v)
	default:
		l = protowire.ConsumeFieldValue(num, typ, b)
	}
	if l < 0 {
		return 0, 0, nil, 0, l
	}
	return num, typ, val, u, tl + l
}

// request decodes a whole request; spans are pushed only when it all decodes.
func (w *wireDecoder) request(b []byte) error {
	w.pending, w.states = w.pending[:0], w.states[:0]
	for len(b) > 0 {
		num, typ, val, _, n := wireField(b)
		if n < 0 {
			return errWire
		}
		if num == 1 && typ == protowire.BytesType {
			if err := w.resourceSpans(val); err != nil {
				return err
			}
		}
		b = b[n:]
	}
	for i, s := range w.pending {
		w.k.push(s, &w.states[i])
		w.pending[i] = nil
	}
	return nil
}

func (w *wireDecoder) resourceSpans(b []byte) error {
	var res Span
	// The resource may follow the spans on the wire: read it first.
	for rest := b; len(rest) > 0; {
		num, typ, val, _, n := wireField(rest)
		if n < 0 {
			return errWire
		}
		if num == 1 && typ == protowire.BytesType {
			if err := w.resource(val, &res); err != nil {
				return err
			}
		}
		rest = rest[n:]
	}
	for len(b) > 0 {
		num, typ, val, _, n := wireField(b)
		if n < 0 {
			return errWire
		}
		if num == 2 && typ == protowire.BytesType {
			if err := w.scopeSpans(val, &res); err != nil {
				return err
			}
		}
		b = b[n:]
	}
	return nil
}

func (w *wireDecoder) resource(b []byte, res *Span) error {
	a := w.k.attrs
	for len(b) > 0 {
		num, typ, val, _, n := wireField(b)
		if n < 0 {
			return errWire
		}
		if num == 1 && typ == protowire.BytesType {
			key, v, err := keyValue(val)
			if err != nil {
				return err
			}
			k, ix := a.classifyBytes(key)
			if k != keyNone && isResourceKey(k) {
				a.apply(res, nil, k, v)
			}
			if ix >= 0 {
				a.keep(res, ix, v)
			}
		}
		b = b[n:]
	}
	return nil
}

func (w *wireDecoder) scopeSpans(b []byte, res *Span) error {
	for len(b) > 0 {
		num, typ, val, _, n := wireField(b)
		if n < 0 {
			return errWire
		}
		if num == 2 && typ == protowire.BytesType {
			if err := w.span(val, res); err != nil {
				return err
			}
		}
		b = b[n:]
	}
	return nil
}

// span decodes one Span message.
func (w *wireDecoder) span(b []byte, res *Span) error {
	a := w.k.attrs
	sp := w.k.newSpan()
	sp.setResource(res)
	var st spanState
	badID := false
	for len(b) > 0 {
		num, typ, val, u, n := wireField(b)
		if n < 0 {
			return errWire
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			badID = !copyID(sp.TraceID[:], val) || badID
		case num == 2 && typ == protowire.BytesType:
			badID = !copyID(sp.SpanID[:], val) || badID
		case num == 3 && typ == protowire.BytesType && len(val) > 0:
			sp.Sampling.Probability = traceStateSampling(string(val))
		case num == 4 && typ == protowire.BytesType:
			badID = !copyID(sp.ParentID[:], val) || badID
		case num == 5 && typ == protowire.BytesType:
			sp.Name = a.in.bytes(val)
		case num == 6 && typ == protowire.VarintType:
			sp.Kind = otlpKind(int32(u))
		case num == 7 && typ == protowire.Fixed64Type:
			sp.Start = clampTime(u)
		case num == 8 && typ == protowire.Fixed64Type:
			sp.End = clampTime(u)
		case num == 9 && typ == protowire.BytesType:
			key, v, err := keyValue(val)
			if err != nil {
				return err
			}
			k, ix := a.classifyBytes(key)
			if k != keyNone && !isResourceKey(k) && !isTagKey(k) {
				a.apply(sp, &st, k, v)
			}
			if ix >= 0 {
				a.keep(sp, ix, v)
			}
		case num == 13 && typ == protowire.BytesType:
			l, ok, err := link(val)
			if err != nil {
				return err
			}
			if ok {
				sp.Links = append(sp.Links, l)
			}
		case num == 15 && typ == protowire.BytesType:
			code, err := statusCode(val)
			if err != nil {
				return err
			}
			sp.Status = otlpStatus(code)
		}
	}
	for _, e := range res.Extra {
		if _, ok := sp.Lookup(e.Key); !ok {
			a.keep(sp, a.extraIx[e.Key], value{s: e.Value})
		}
	}
	if badID {
		w.k.damagef(DamageMissingID, "%s: span %q: trace, span or parent id of the wrong length", w.k.file, sp.Name)
		return nil
	}
	w.pending = append(w.pending, sp)
	w.states = append(w.states, st)
	return nil
}

// keyValue decodes a KeyValue message; the key aliases b.
func keyValue(b []byte) (key []byte, v value, err error) {
	v.kind = valOther
	for len(b) > 0 {
		num, typ, val, _, n := wireField(b)
		if n < 0 {
			return nil, v, errWire
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			key = val
		case num == 2 && typ == protowire.BytesType:
			if v, err = anyValueWire(val); err != nil {
				return nil, v, err
			}
		}
		b = b[n:]
	}
	return key, v, nil
}

// anyValueWire decodes the scalar cases of an AnyValue; the string aliases b.
func anyValueWire(b []byte) (value, error) {
	v := value{kind: valOther}
	for len(b) > 0 {
		num, typ, val, u, n := wireField(b)
		if n < 0 {
			return v, errWire
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			v = value{kind: valString, raw: val}
			if val == nil {
				v.raw = []byte{}
			}
		case num == 2 && typ == protowire.VarintType:
			v = value{kind: valBool, b: u != 0}
		case num == 3 && typ == protowire.VarintType:
			v = value{kind: valInt, i: int64(u)}
		case num == 4 && typ == protowire.Fixed64Type:
			v = value{kind: valDouble, f: math.Float64frombits(u)}
		case num >= 5 && num <= 8:
			v = value{kind: valOther}
		}
		b = b[n:]
	}
	return v, nil
}

// link decodes a Span.Link; ok is false when its ids are unusable.
func link(b []byte) (l Link, ok bool, err error) {
	okT, okS := true, true
	for len(b) > 0 {
		num, typ, val, _, n := wireField(b)
		if n < 0 {
			return l, false, errWire
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			okT = copyID(l.TraceID[:], val)
		case num == 2 && typ == protowire.BytesType:
			okS = copyID(l.SpanID[:], val)
		}
		b = b[n:]
	}
	return l, okT && okS && !l.TraceID.IsZero() && !l.SpanID.IsZero(), nil
}

// statusCode decodes the code of a Status message.
func statusCode(b []byte) (int32, error) {
	var code int32
	for len(b) > 0 {
		num, typ, _, u, n := wireField(b)
		if n < 0 {
			return 0, errWire
		}
		if num == 3 && typ == protowire.VarintType {
			code = int32(u)
		}
		b = b[n:]
	}
	return code, nil
}

// copyID sets a binary id from src, which must have the id's length; an
// empty src sets it to zero (a missing parent means a root; a missing trace
// or span id is caught by the sink).
func copyID(dst, src []byte) bool {
	if len(src) == 0 {
		clear(dst)
		return true
	}
	if len(src) != len(dst) {
		return false
	}
	copy(dst, src)
	return true
}
