package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// Format names a trace file format.
type Format string

// The formats perfcast reads.
const (
	FormatOTLPJSON  Format = "otlp-json"
	FormatOTLPProto Format = "otlp-proto"
	FormatZipkin    Format = "zipkin-json"
	FormatJaeger    Format = "jaeger-json"
)

// windowSize is how much of an input is looked at to recognize its format.
const windowSize = 1 << 16

// Errors for input that holds no traces: in no format perfcast knows,
// empty, or OpenTelemetry signals other than traces.
var (
	errNotTraces = errors.New("not a trace file (OTLP JSON or protobuf, Zipkin v2 JSON, Jaeger JSON)")
	errEmpty     = errors.New("empty input")
	errMetrics   = errors.New("OTLP metrics, not traces")
	errLogs      = errors.New("OTLP logs, not traces")
)

// holdsNoTraces reports whether err says that an input holds no traces,
// rather than that it could not be read.
func holdsNoTraces(err error) bool {
	return errors.Is(err, errNotTraces) || errors.Is(err, errEmpty) || errors.Is(err, errMetrics) || errors.Is(err, errLogs)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader and counts what it returns.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Detect recognizes the format of the start of an input, gzip included. It
// reads at most 64 KiB past the gzip header and is meant for diagnostics and
// tests; Open recognizes formats by itself.
func Detect(r io.Reader) (Format, error) {
	k := &sink{file: "input", attrs: newAttrSet(nil), stats: &FileStats{}, alloc: func() *Span { return &Span{} }}
	if _, err := detect(r, k); err != nil {
		return "", err
	}
	return k.stats.Format, nil
}

// detect recognizes the format of r and returns a decoder for it.
func detect(r io.Reader, k *sink) (decoder, error) {
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, windowSize)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		k.stats.Gzip = true
		cr = &countingReader{r: gz}
		br = bufio.NewReaderSize(cr, windowSize)
	}
	k.offset = func() int64 { return cr.n }
	win, err := br.Peek(windowSize)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		if len(win) == 0 {
			return nil, err
		}
	}
	// Skip a byte-order mark and leading white space for the JSON formats.
	bom := []byte("\xef\xbb\xbf")
	text := bytes.TrimLeft(bytes.TrimPrefix(win, bom), " \t\r\n")
	if len(text) == 0 {
		if len(win) == 0 {
			return nil, errEmpty
		}
		return nil, errNotTraces
	}
	if (text[0] == '[' || text[0] == '{') && bytes.HasPrefix(win, bom) {
		// The JSON decoders never see the mark.
		if _, err := br.Discard(len(bom)); err != nil {
			return nil, err
		}
	}
	switch text[0] {
	case '[':
		k.stats.Format = FormatZipkin
		return newZipkinDecoder(br, k), nil
	case '{':
		f, err := classifyJSON(text)
		if err != nil {
			return nil, err
		}
		k.stats.Format = f
		if f == FormatOTLPJSON {
			return newOTLPJSONDecoder(br, k), nil
		}
		return newJaegerDecoder(br, k), nil
	}
	fr, ok := classifyProto(win)
	if !ok {
		return nil, errNotTraces
	}
	k.stats.Format = FormatOTLPProto
	return newOTLPProtoDecoder(br, k, fr), nil
}

// classifyJSON tells OTLP JSON from Jaeger JSON by the keys of the first
// object.
func classifyJSON(text []byte) (Format, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if _, err := dec.Token(); err != nil {
		return "", errNotTraces
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		switch key {
		case "resourceSpans", "resource_spans":
			return FormatOTLPJSON, nil
		case "data", "traceID", "spans", "processes":
			return FormatJaeger, nil
		case "resourceMetrics", "resource_metrics":
			return "", errMetrics
		case "resourceLogs", "resource_logs":
			return "", errLogs
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
	}
	return "", errNotTraces
}

// protoFraming is how OTLP protobuf requests are laid out in a file.
type protoFraming uint8

const (
	framingSingle protoFraming = iota // one ExportTraceServiceRequest
	framingVarint                     // each request preceded by a varint length
	framingUint32                     // each request preceded by a 4-byte big-endian length
)

// String names the framing for messages.
func (f protoFraming) String() string {
	switch f {
	case framingVarint:
		return "varint-delimited"
	case framingUint32:
		return "uint32-delimited"
	}
	return "single message"
}

// classifyProto recognizes OTLP protobuf framings in the first bytes of an
// input. A request is a sequence of field 1 (ResourceSpans, length-delimited),
// so a single request starts with the byte 0x0a; a varint-framed stream starts
// with a length and then 0x0a; a uint32-framed one with 0x00 (lengths under
// 16 MiB) and 0x0a after four bytes.
func classifyProto(win []byte) (protoFraming, bool) {
	if len(win) < 2 {
		return 0, false
	}
	switch {
	case win[0] == 0x0a:
		return framingSingle, plausibleRequest(win)
	case win[0] == 0x00:
		if len(win) < 5 {
			return 0, false
		}
		n := binary.BigEndian.Uint32(win)
		body := win[4:]
		if uint64(len(body)) > uint64(n) {
			body = body[:n]
		}
		return framingUint32, n > 0 && plausibleRequest(body)
	default:
		n, l := protowire.ConsumeVarint(win)
		if l < 0 || n == 0 {
			return 0, false
		}
		body := win[l:]
		if uint64(len(body)) > n {
			body = body[:n]
		}
		return framingVarint, plausibleRequest(body)
	}
}

// plausibleRequest checks that b (possibly cut short) looks like an
// ExportTraceServiceRequest: fields numbered 1 holding ResourceSpans, whose
// own fields are those of ResourceSpans.
func plausibleRequest(b []byte) bool {
	first := true
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return !first && len(b) < 12 // a tag cut by the window end
		}
		if num != 1 || typ != protowire.BytesType {
			return false
		}
		b = b[l:]
		n, l := protowire.ConsumeVarint(b)
		if l < 0 {
			return !first && len(b) < 12
		}
		b = b[l:]
		body := b
		if uint64(len(body)) > n {
			body = body[:n]
		}
		if !plausibleResourceSpans(body) {
			return false
		}
		if uint64(len(b)) <= n {
			return true // the window ends inside this field
		}
		b = b[n:]
		first = false
	}
	return !first
}

// plausibleResourceSpans checks the fields of a (possibly cut) ResourceSpans:
// resource (1), scope_spans (2) and schema_url (3), all length-delimited.
func plausibleResourceSpans(b []byte) bool {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return len(b) < 12
		}
		if num < 1 || num > 3 || typ != protowire.BytesType {
			return false
		}
		b = b[l:]
		n, l := protowire.ConsumeVarint(b)
		if l < 0 {
			return len(b) < 12
		}
		b = b[l:]
		if uint64(len(b)) <= n {
			return true
		}
		b = b[n:]
	}
	return true
}
