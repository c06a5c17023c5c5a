package ingest

import (
	"math"
	"strconv"
	"strings"
)

// attrKey identifies the attributes and tags the readers look at.
type attrKey uint8

const (
	keyNone attrKey = iota
	keyServiceName
	keyHostName
	keyHostnameTag // Jaeger process tag "hostname"
	keyIP          // Jaeger process tag "ip"
	keyInstanceID
	keyPodName
	keyHTTPRoute
	keyHTTPMethod
	keyHTTPMethodOld
	keyURLPath
	keyHTTPTarget
	keyHTTPPath // Zipkin's tag for the request path
	keyDBSystem
	keyDBSystemName // db.system.name, the newer name of db.system
	keyServerAddress
	keyNetPeerName // net.peer.name, the older name of server.address
	keyPeerService
	keyCPUTime
	keySpanKind   // Jaeger and Zipkin tag "span.kind"
	keyStatusCode // otel.status_code tag of Jaeger and Zipkin
	keyError      // Jaeger and Zipkin tag "error"
	keySamplerType
	keySamplerParam
	keyLanguage      // telemetry.sdk.language
	keyRuntimeName   // process.runtime.name
	keyPID           // process.pid
	keyJaegerVersion // Jaeger client process tag "jaeger.version"
)

var knownKeys = map[string]attrKey{
	"service.name":           keyServiceName,
	"host.name":              keyHostName,
	"hostname":               keyHostnameTag,
	"ip":                     keyIP,
	"service.instance.id":    keyInstanceID,
	"k8s.pod.name":           keyPodName,
	"http.route":             keyHTTPRoute,
	"http.request.method":    keyHTTPMethod,
	"http.method":            keyHTTPMethodOld,
	"url.path":               keyURLPath,
	"http.target":            keyHTTPTarget,
	"http.path":              keyHTTPPath,
	"db.system":              keyDBSystem,
	"db.system.name":         keyDBSystemName,
	"server.address":         keyServerAddress,
	"net.peer.name":          keyNetPeerName,
	"peer.service":           keyPeerService,
	"perfcast.cpu.time":      keyCPUTime,
	"span.kind":              keySpanKind,
	"otel.status_code":       keyStatusCode,
	"error":                  keyError,
	"sampler.type":           keySamplerType,
	"sampler.param":          keySamplerParam,
	"telemetry.sdk.language": keyLanguage,
	"process.runtime.name":   keyRuntimeName,
	"process.pid":            keyPID,
	"jaeger.version":         keyJaegerVersion,
}

// valueKind is the type of an attribute value.
type valueKind uint8

const (
	valString valueKind = iota
	valInt
	valDouble
	valBool
	valOther // arrays, maps, bytes, empty values: neither applied nor kept
)

// value is one attribute value, whatever format it came from.
type value struct {
	kind valueKind
	s    string // valString, valOther
	raw  []byte // valString read from protobuf, instead of s
	i    int64
	f    float64
	b    bool
}

// text renders the value as Attr.Value does.
func (v value) text() string {
	switch v.kind {
	case valString:
		if v.raw != nil {
			return string(v.raw)
		}
		return v.s
	case valInt:
		return strconv.FormatInt(v.i, 10)
	case valDouble:
		return formatFloat(v.f)
	case valBool:
		return strconv.FormatBool(v.b)
	}
	return v.s
}

// number returns the value as a float when it is one, or a string holding one.
func (v value) number() (float64, bool) {
	switch v.kind {
	case valInt:
		return float64(v.i), true
	case valDouble:
		return v.f, true
	case valString:
		f, err := strconv.ParseFloat(v.text(), 64)
		return f, err == nil
	}
	return 0, false
}

// formatFloat is the one text form of doubles across formats.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// attrSet decides which attributes a reader keeps and applies them to spans.
type attrSet struct {
	extra   []string       // Options.Attributes, in order
	extraIx map[string]int // key -> index into extra
	in      interner
}

func newAttrSet(extra []string) *attrSet {
	a := &attrSet{}
	for _, k := range extra {
		if k == "" {
			continue
		}
		if a.extraIx == nil {
			a.extraIx = make(map[string]int)
		}
		if _, dup := a.extraIx[k]; !dup {
			a.extraIx[k] = len(a.extra)
			a.extra = append(a.extra, k)
		}
	}
	return a
}

// classify says whether key is known or kept; ix is the extra index or -1.
func (a *attrSet) classify(key string) (k attrKey, ix int) {
	k = knownKeys[key]
	ix = -1
	if a.extraIx != nil {
		if i, ok := a.extraIx[key]; ok {
			ix = i
		}
	}
	return k, ix
}

// classifyBytes is classify for a key not yet made a string; it does not
// allocate.
func (a *attrSet) classifyBytes(key []byte) (k attrKey, ix int) {
	k = knownKeys[string(key)]
	ix = -1
	if a.extraIx != nil {
		if i, ok := a.extraIx[string(key)]; ok {
			ix = i
		}
	}
	return k, ix
}

// spanState carries per-span facts that tags may set in formats without
// first-class fields (Jaeger, Zipkin).
type spanState struct {
	kindTag   string
	statusTag string
	errorTag  bool
	badValue  string // key of a known attribute whose value had the wrong type
	// samplerType and samplerParam are Jaeger's sampler tags.
	samplerType  string
	samplerParam float64
	hasParam     bool
}

// istr returns the value as an interned string.
func (a *attrSet) istr(v value) string {
	if v.kind == valString && v.raw != nil {
		return a.in.bytes(v.raw)
	}
	return a.in.str(v.text())
}

// apply sets the field for a known key. Resource-level keys (service, host,
// instance) are applied by the same function.
func (a *attrSet) apply(sp *Span, st *spanState, k attrKey, v value) {
	if v.kind == valOther {
		return // arrays, maps and bytes carry none of these
	}
	switch k {
	case keyServiceName:
		sp.Service = a.istr(v)
	case keyHostName:
		sp.Host = a.istr(v)
	case keyHostnameTag:
		if sp.Host == "" {
			sp.Host = a.istr(v)
		}
	case keyIP:
		// An address is a weaker host name than hostname or host.name.
		if sp.Host == "" {
			sp.Host = a.istr(v)
		}
	case keyInstanceID:
		sp.Instance = a.istr(v)
	case keyPodName:
		sp.Pod = a.istr(v)
	case keyLanguage:
		processOf(sp).Language = a.istr(v)
	case keyRuntimeName:
		processOf(sp).Runtime = a.istr(v)
	case keyPID:
		processOf(sp).PID = a.istr(v)
	case keyJaegerVersion:
		// A Jaeger client names its language: "Node-3.18.1", "Python-4.8.0".
		if l := jaegerClientLanguage(v.text()); l != "" && (sp.Process == nil || sp.Process.Language == "") {
			processOf(sp).Language = a.in.str(l)
		}
	case keyHTTPRoute:
		sp.HTTPRoute = a.istr(v)
	case keyHTTPMethod:
		sp.HTTPMethod = a.istr(v)
	case keyHTTPMethodOld:
		if sp.HTTPMethod == "" {
			sp.HTTPMethod = a.istr(v)
		}
	case keyURLPath:
		sp.URLPath = v.text()
	case keyHTTPTarget, keyHTTPPath:
		if sp.URLPath == "" {
			sp.URLPath = v.text()
		}
	case keyDBSystem:
		sp.DBSystem = a.istr(v)
	case keyDBSystemName:
		if sp.DBSystem == "" {
			sp.DBSystem = a.istr(v)
		}
	case keyServerAddress:
		sp.ServerAddress = a.istr(v)
	case keyNetPeerName:
		if sp.ServerAddress == "" {
			sp.ServerAddress = a.istr(v)
		}
	case keyPeerService:
		sp.PeerService = a.istr(v)
	case keyCPUTime:
		f, ok := v.number()
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			if st != nil {
				st.badValue = "perfcast.cpu.time"
			}
			return
		}
		sp.CPUTime = f
	case keySpanKind:
		if st != nil {
			st.kindTag = v.text()
		}
	case keyStatusCode:
		if st != nil {
			st.statusTag = v.text()
		}
	case keySamplerType:
		if st != nil {
			st.samplerType = v.text()
		}
	case keySamplerParam:
		if st != nil {
			if v.kind == valBool {
				st.samplerParam, st.hasParam = 0, true
				if v.b {
					st.samplerParam = 1
				}
			} else {
				st.samplerParam, st.hasParam = v.number()
			}
		}
	case keyError:
		if st != nil {
			// Zipkin marks errors with any "error" tag, Jaeger with error=true.
			st.errorTag = !(v.kind == valBool && !v.b) && !(v.kind == valString && v.s == "false")
		}
	}
}

// keep records an extra attribute at index ix, keeping Extra in config order.
// Only scalar values (strings, numbers, booleans) are kept.
func (a *attrSet) keep(sp *Span, ix int, v value) {
	if v.kind == valOther {
		return
	}
	key := a.extra[ix]
	for i := range sp.Extra {
		if sp.Extra[i].Key == key {
			sp.Extra[i].Value = v.text()
			return
		}
	}
	at := len(sp.Extra)
	for i := range sp.Extra {
		if a.extraIx[sp.Extra[i].Key] > ix {
			at = i
			break
		}
	}
	sp.Extra = append(sp.Extra, Attr{})
	copy(sp.Extra[at+1:], sp.Extra[at:])
	sp.Extra[at] = Attr{Key: key, Value: v.text()}
}

// kindFromTag maps span.kind tag values and Zipkin kinds to a Kind.
func kindFromTag(s string) Kind {
	switch s {
	case "server", "SERVER":
		return KindServer
	case "client", "CLIENT":
		return KindClient
	case "producer", "PRODUCER":
		return KindProducer
	case "consumer", "CONSUMER":
		return KindConsumer
	}
	return KindInternal
}

// finishTags turns tag-borne kind and status into fields.
func finishTags(sp *Span, st *spanState) {
	if st.kindTag != "" {
		sp.Kind = kindFromTag(st.kindTag)
	}
	switch st.statusTag {
	case "ERROR", "error":
		sp.Status = StatusError
	case "OK", "ok":
		sp.Status = StatusOK
	}
	if st.errorTag {
		sp.Status = StatusError
	}
}

// processOf returns the span's Process, adding an empty one. Only the
// resource's span is given one: its spans share it (Span.setResource).
func processOf(sp *Span) *Process {
	if sp.Process == nil {
		sp.Process = &Process{}
	}
	return sp.Process
}

// jaegerClientLanguage is the telemetry.sdk.language of the Jaeger client
// that a jaeger.version tag names ("Go-2.30.0", "Node-3.18.1",
// "Python-4.8.0", "Java-1.8.1"), "" for one it does not know.
func jaegerClientLanguage(version string) string {
	client, _, _ := strings.Cut(version, "-")
	switch strings.ToLower(client) {
	case "go", "golang":
		return "go"
	case "node", "nodejs":
		return "nodejs"
	case "python", "py":
		return "python"
	case "java":
		return "java"
	case "ruby":
		return "ruby"
	case "cpp", "c++":
		return "cpp"
	case "csharp", "c#", "dotnet":
		return "dotnet"
	}
	return ""
}
