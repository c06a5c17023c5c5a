package ingest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// TraceID is a 16-byte trace identifier. The zero value is invalid.
type TraceID [16]byte

// SpanID is an 8-byte span identifier. The zero value means "none".
type SpanID [8]byte

// IsZero reports whether the id is all zeros.
func (t TraceID) IsZero() bool { return t == TraceID{} }

// String returns the id as 32 lowercase hex digits.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// IsZero reports whether the id is all zeros.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// String returns the id as 16 lowercase hex digits.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// Compare orders trace ids bytewise; it returns -1, 0 or +1.
func (t TraceID) Compare(o TraceID) int {
	for i := range t {
		if t[i] != o[i] {
			if t[i] < o[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Compare orders span ids bytewise; it returns -1, 0 or +1.
func (s SpanID) Compare(o SpanID) int {
	for i := range s {
		if s[i] != o[i] {
			if s[i] < o[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

var errBadHexID = errors.New("malformed hex id")

// ParseTraceID parses up to 32 hex digits; shorter ids (64-bit Zipkin and
// Jaeger ids, or ids with leading zeros dropped) are padded on the left.
func ParseTraceID(s string) (TraceID, error) {
	var id TraceID
	return id, parseHexInto(id[:], s)
}

// ParseSpanID parses up to 16 hex digits, padded on the left.
func ParseSpanID(s string) (SpanID, error) {
	var id SpanID
	return id, parseHexInto(id[:], s)
}

// parseHexInto right-aligns the hex digits of s into dst.
func parseHexInto(dst []byte, s string) error {
	if len(s) == 0 || len(s) > 2*len(dst) {
		return errBadHexID
	}
	j := len(dst) - 1
	for i := len(s); i > 0; i -= 2 {
		lo, ok := unhex(s[i-1])
		if !ok {
			return errBadHexID
		}
		var hi byte
		if i >= 2 {
			if hi, ok = unhex(s[i-2]); !ok {
				return errBadHexID
			}
		}
		dst[j] = hi<<4 | lo
		j--
	}
	return nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Kind is the role of a span in a call, as OpenTelemetry defines it.
type Kind uint8

// Span kinds. Unspecified kinds are read as [KindInternal].
const (
	KindInternal Kind = iota
	KindServer
	KindClient
	KindProducer
	KindConsumer
)

var kindNames = [...]string{"internal", "server", "client", "producer", "consumer"}

// String returns the lowercase name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Status is the outcome of a span.
type Status uint8

// Span statuses.
const (
	StatusUnset Status = iota
	StatusOK
	StatusError
)

var statusNames = [...]string{"unset", "ok", "error"}

// String returns the lowercase name of the status.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Link points from a span to another span, possibly in another trace.
type Link struct {
	TraceID TraceID
	SpanID  SpanID
}

// Attr is one extra attribute kept because [Options.Attributes] names it.
// Values are text: integers in decimal, doubles in the shortest 'g' form,
// booleans as true/false.
type Attr struct {
	Key   string
	Value string
}

// Span is the normalized span every reader yields. It keeps only what the
// model extraction needs; times are Unix nanoseconds.
type Span struct {
	TraceID  TraceID
	SpanID   SpanID
	ParentID SpanID // zero for a root span

	Start int64 // Unix nanoseconds
	End   int64 // Unix nanoseconds

	// CPUTime is the attribute perfcast.cpu.time in seconds, NaN when absent;
	// see HasCPUTime.
	CPUTime float64

	Name     string
	Service  string // resource attribute service.name
	Host     string // host.name (Jaeger: hostname; Zipkin: local endpoint address as a fallback)
	Instance string // service.instance.id
	Pod      string // k8s.pod.name
	// Process is what the resource says of the process that made the
	// span, shared by the resource's spans; nil where it says nothing.
	Process *Process

	HTTPRoute     string // http.route
	HTTPMethod    string // http.request.method, else http.method
	URLPath       string // url.path, else http.target
	DBSystem      string // db.system, else db.system.name
	ServerAddress string // server.address, else net.peer.name
	PeerService   string // peer.service (Zipkin: remote endpoint service name as a fallback)

	Links []Link // links to other spans; Jaeger references that are not the parent
	// Sampling is how the span's trace came to be kept, where it says.
	Sampling Sampling
	Extra    []Attr // attributes named in Options.Attributes, in that order

	Kind   Kind
	Status Status

	// FollowsFrom is set when the parent reference is a Jaeger FOLLOWS_FROM:
	// the parent does not wait for this span.
	FollowsFrom bool
	// Shared is set for a Zipkin server span that shares its id with the
	// client span that called it.
	Shared bool
}

// Duration is End minus Start in nanoseconds.
func (s *Span) Duration() int64 { return s.End - s.Start }

// Process is what a span's resource says of the process that made it.
type Process struct {
	// Language is telemetry.sdk.language (Jaeger: the language of the
	// client that jaeger.version names).
	Language string
	// Runtime is process.runtime.name.
	Runtime string
	// PID is process.pid, as text.
	PID string
}

// String renders the process's fields, so that spans print alike whichever
// resource they were read from.
func (p *Process) String() string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{Language:%s Runtime:%s PID:%s}", p.Language, p.Runtime, p.PID)
}

// setResource copies the resource's fields (service, host, instance, pod,
// process) from res.
func (s *Span) setResource(res *Span) {
	s.Service, s.Host, s.Instance, s.Pod, s.Process = res.Service, res.Host, res.Instance, res.Pod, res.Process
}

// HasCPUTime reports whether the span carries perfcast.cpu.time.
func (s *Span) HasCPUTime() bool { return !math.IsNaN(s.CPUTime) }

// Lookup returns the value of an extra attribute named in Options.Attributes.
func (s *Span) Lookup(key string) (string, bool) {
	for _, a := range s.Extra {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// HostKey names the machine the span ran on for clock-skew purposes: the
// host, else the pod, else the instance, else the service.
func (s *Span) HostKey() string {
	switch {
	case s.Host != "":
		return s.Host
	case s.Pod != "":
		return s.Pod
	case s.Instance != "":
		return s.Instance
	}
	return s.Service
}

// Replica names the instance of its service the span ran in:
// service.instance.id, else k8s.pod.name, else "".
func (s *Span) Replica() string {
	if s.Instance != "" {
		return s.Instance
	}
	return s.Pod
}
