package receive

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/model"
)

// Handler serves OTLP/HTTP and the receiver's own pages:
//
//	POST /v1/traces  an ExportTraceServiceRequest, protobuf
//	                 (application/x-protobuf) or JSON (application/json),
//	                 gzip-encoded or not
//	GET  /model      the model of the traces folded so far (YAML;
//	                 ?format=json for JSON)
//	GET  /stats      what the receiver has taken in (JSON)
//	GET  /healthz    200 while the receiver runs
func (r *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.serveTraces)
	mux.HandleFunc("GET /model", r.serveModel)
	mux.HandleFunc("GET /stats", r.serveStats)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-r.stopped:
			http.Error(w, ErrStopped.Error(), http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "ok")
		}
	})
	return mux
}

// serveTraces takes one export request, as the OTLP/HTTP specification
// has it: 200 with a response that counts the spans rejected, 400 for a
// body that does not decode, 415 for another content type, 413 for a body
// over the limit, 503 (retryable) once the receiver stops.
func (r *Receiver) serveTraces(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	format, ok := requestFormat(req.Header.Get("Content-Type"))
	if !ok {
		r.badRequests.Add(1)
		writeStatus(w, ingest.FormatOTLPJSON, http.StatusUnsupportedMediaType, codes.InvalidArgument,
			fmt.Sprintf("content type %q: send application/x-protobuf or application/json", req.Header.Get("Content-Type")))
		return
	}
	body, err := readBody(w, req, r.opts.MaxBodyBytes)
	if err != nil {
		r.badRequests.Add(1)
		code := http.StatusBadRequest
		if errors.Is(err, errTooLarge) {
			code = http.StatusRequestEntityTooLarge
		}
		writeStatus(w, format, code, codes.InvalidArgument, err.Error())
		return
	}
	spans, st, err := ingest.DecodeRequest(body, format, "request from "+req.RemoteAddr, ingest.Options{Attributes: r.opts.Config.Attributes()})
	if err != nil {
		r.badRequests.Add(1)
		writeStatus(w, format, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}
	resp, err := r.take(req.Context(), spans, st)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeStatus(w, format, http.StatusServiceUnavailable, codes.Unavailable, err.Error())
		return
	}
	var out []byte
	if format == ingest.FormatOTLPProto {
		out, err = resp.MarshalProto()
	} else {
		out, err = resp.MarshalJSON()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType(format))
	_, _ = w.Write(out)
}

// take hands a request's spans to Run and counts them. The response it
// returns holds a partial success when spans were rejected one by one.
func (r *Receiver) take(ctx context.Context, spans []*ingest.Span, st ingest.RequestStats) (ptraceotlp.ExportResponse, error) {
	resp := ptraceotlp.NewExportResponse()
	if len(spans) > 0 {
		if err := r.deliver(ctx, spans); err != nil {
			return resp, err
		}
	}
	r.spans.Add(st.Spans)
	if n := st.Rejected(); n > 0 {
		r.rejected.Add(n)
		resp.PartialSuccess().SetRejectedSpans(n)
		resp.PartialSuccess().SetErrorMessage(firstDamage(st.Damage))
	}
	return resp, nil
}

// requestFormat maps an OTLP/HTTP content type to the encoding.
func requestFormat(ct string) (ingest.Format, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", false
	}
	switch mt {
	case "application/x-protobuf", "application/protobuf":
		return ingest.FormatOTLPProto, true
	case "application/json":
		return ingest.FormatOTLPJSON, true
	}
	return "", false
}

func contentType(f ingest.Format) string {
	if f == ingest.FormatOTLPProto {
		return "application/x-protobuf"
	}
	return "application/json"
}

var errTooLarge = errors.New("request body too large")

// readBody reads the body, gunzipping it when it says so, up to limit
// bytes before and after decompression.
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	var in io.Reader = http.MaxBytesReader(w, req.Body, limit)
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, bodyError(err)
		}
		defer zr.Close()
		in = zr
	default:
		return nil, fmt.Errorf("content encoding %q: send gzip or none", enc)
	}
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, bodyError(err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: over %d bytes decompressed", errTooLarge, limit)
	}
	return b, nil
}

func bodyError(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return fmt.Errorf("%w: over %d bytes", errTooLarge, mb.Limit)
	}
	return fmt.Errorf("reading the body: %w", err)
}

// writeStatus writes an error as OTLP/HTTP wants it: a google.rpc.Status
// message in the request's encoding.
func writeStatus(w http.ResponseWriter, f ingest.Format, httpCode int, code codes.Code, msg string) {
	st := &spb.Status{Code: int32(code), Message: msg}
	var out []byte
	if f == ingest.FormatOTLPProto {
		out, _ = proto.Marshal(st)
	} else {
		out, _ = protojson.Marshal(st)
	}
	w.Header().Set("Content-Type", contentType(f))
	w.WriteHeader(httpCode)
	_, _ = w.Write(out)
}

// firstDamage is one message saying why spans were rejected.
func firstDamage(d ingest.Damage) string {
	for _, k := range d.Kinds() {
		if s := d.Samples[k]; len(s) > 0 {
			return s[0]
		}
	}
	return "spans rejected"
}

// serveModel makes the model of the traces folded so far.
func (r *Receiver) serveModel(w http.ResponseWriter, req *http.Request) {
	m, _, err := r.Model(req.Context())
	switch {
	case errors.Is(err, ErrNoTraces):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case errors.Is(err, ErrStopped):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	format, ct := model.YAML, "application/yaml"
	if req.URL.Query().Get("format") == "json" {
		format, ct = model.JSON, "application/json"
	}
	w.Header().Set("Content-Type", ct)
	_ = m.Encode(w, format)
}

func (r *Receiver) serveStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(r.Stats())
}
