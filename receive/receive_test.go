package receive

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
	"github.com/perfcast/perfcast/model"
)

// running is a Receiver serving over HTTP, its Run loop going.
type running struct {
	*Receiver
	srv  *httptest.Server
	stop func() error
}

func start(t *testing.T, opts Options) *running {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	srv := httptest.NewServer(r.Handler())
	stopped := false
	rr := &running{Receiver: r, srv: srv}
	rr.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		srv.Close()
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = rr.stop() })
	return rr
}

// post sends one export request and returns the response.
func (rr *running) post(t *testing.T, body []byte, contentType string, gz bool) (int, []byte) {
	t.Helper()
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	req, err := http.NewRequest(http.MethodPost, rr.srv.URL+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// jsonRequest is spans as one OTLP JSON export request.
func jsonRequest(t *testing.T, spans []*ingest.Span) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&b, spans, len(spans)); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// sendAll posts spans in batches of whole traces, protobuf and JSON in
// turn, some gzipped.
func (rr *running) sendAll(t *testing.T, spans []*ingest.Span) {
	t.Helper()
	for i, b := range batches(spans, 40) {
		var code int
		var out []byte
		if i%2 == 0 {
			code, out = rr.post(t, ingesttest.ProtoRequest(b), "application/x-protobuf", i%4 == 0)
		} else {
			code, out = rr.post(t, jsonRequest(t, b), "application/json; charset=utf-8", i%4 == 1)
		}
		if code != http.StatusOK {
			t.Fatalf("batch %d: status %d: %s", i, code, out)
		}
	}
}

// batches cuts spans into runs of about n, at trace boundaries.
func batches(spans []*ingest.Span, n int) [][]*ingest.Span {
	var out [][]*ingest.Span
	for len(spans) > 0 {
		end := min(n, len(spans))
		for end < len(spans) && spans[end].TraceID == spans[end-1].TraceID {
			end++
		}
		out = append(out, spans[:end])
		spans = spans[end:]
	}
	return out
}

// extracted is the model perfcast extract makes of the spans as a file.
func extracted(t *testing.T, spans []*ingest.Span, name string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	var b bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&b, spans, 10); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := extract.Run(context.Background(), []string{path}, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Model.Marshal()
}

func readModel(t *testing.T, dir string) []byte {
	t.Helper()
	m, err := model.Load(filepath.Join(dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	return m.Marshal()
}

func TestReceiveMatchesExtract(t *testing.T) {
	// With traces completing only at the end, the receiver folds them in
	// the order extraction from a file does: the same model, byte for byte.
	spans := ingesttest.NewGenerator(1).Traces(400)
	dir := t.TempDir()
	rr := start(t, Options{Dir: dir, Name: "shop", Idle: time.Hour})
	rr.sendAll(t, spans)
	if err := rr.stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := readModel(t, dir), extracted(t, spans, "shop"); !bytes.Equal(got, want) {
		t.Errorf("received:\n%s\nextracted from a file:\n%s", got, want)
	}
	st := rr.Stats()
	if st.Traces != 400 || st.Spans != int64(len(spans)) || st.RejectedSpans != 0 || st.Checkpoints != 1 {
		t.Errorf("stats %+v", st)
	}
	var rep extract.Report
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.Traces != 400 {
		t.Errorf("report: %v, %d traces", err, rep.Traces)
	}
}

func TestReceiveRestart(t *testing.T) {
	// Stopped halfway and started again on its directory, the receiver
	// goes on from the state it saved.
	spans := ingesttest.NewGenerator(2).Traces(400)
	half := batches(spans, len(spans)/2)[0]
	dir := t.TempDir()
	first := start(t, Options{Dir: dir, Name: "shop", Idle: time.Hour})
	first.sendAll(t, half)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	st, err := LoadState(dir)
	if err != nil || st.Traces != int64(len(batches(half, 1))) {
		t.Fatalf("saved state: %v", err)
	}
	second := start(t, Options{Dir: dir, Name: "shop", Idle: time.Hour})
	second.sendAll(t, spans[len(half):])
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := readModel(t, dir), extracted(t, spans, "shop"); !bytes.Equal(got, want) {
		t.Errorf("received across a restart:\n%s\nextracted from a file:\n%s", got, want)
	}
}

func TestReceiveCompletesIdleTracesAndCheckpoints(t *testing.T) {
	dir := t.TempDir()
	rr := start(t, Options{Dir: dir, Idle: 50 * time.Millisecond, Checkpoint: 100 * time.Millisecond, tick: 10 * time.Millisecond})
	resp, err := http.Get(rr.srv.URL + "/model")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("model before any trace: status %d, want 404", resp.StatusCode)
	}
	rr.sendAll(t, ingesttest.NewGenerator(3).Traces(50))
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The state is written first, then the model.
		st, err := LoadState(dir)
		_, merr := os.Stat(filepath.Join(dir, ModelFile))
		if err == nil && st.Traces == 50 && merr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint with the 50 traces and their model: %v, %v, %+v", err, merr, rr.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err = http.Get(rr.srv.URL + "/model")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m, err := model.Parse(body, "model"); resp.StatusCode != http.StatusOK || err != nil || len(m.Workloads) == 0 {
		t.Errorf("GET /model: status %d, %v:\n%s", resp.StatusCode, err, body)
	}
	resp, err = http.Get(rr.srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Traces != 50 || st.OpenTraces != 0 {
		t.Errorf("GET /stats: %v, %+v", err, st)
	}
}

// rejected decodes an ExportTraceServiceResponse: the rejected spans and
// the message of its partial success.
func rejected(t *testing.T, b []byte, json bool) (int64, string) {
	t.Helper()
	resp := ptraceotlp.NewExportResponse()
	var err error
	if json {
		err = resp.UnmarshalJSON(b)
	} else {
		err = resp.UnmarshalProto(b)
	}
	if err != nil {
		t.Fatalf("response %q: %v", b, err)
	}
	return resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage()
}

func TestReceiveHTTP(t *testing.T) {
	dir := t.TempDir()
	rr := start(t, Options{Dir: dir, Idle: time.Hour, MaxBodyBytes: 1 << 20})
	spans := ingesttest.NewGenerator(4).Traces(5)

	code, out := rr.post(t, ingesttest.ProtoRequest(spans), "application/x-protobuf", false)
	if n, msg := rejected(t, out, false); code != http.StatusOK || n != 0 || msg != "" {
		t.Errorf("protobuf: status %d, %d rejected, %q; want 200 and full success", code, n, msg)
	}
	code, out = rr.post(t, jsonRequest(t, spans), "application/json", true)
	if n, msg := rejected(t, out, true); code != http.StatusOK || n != 0 || msg != "" {
		t.Errorf("gzipped JSON: status %d, %d rejected, %q", code, n, msg)
	}

	// A span without ids is rejected, the others kept.
	bad := *spans[0]
	bad.TraceID = ingest.TraceID{}
	code, out = rr.post(t, ingesttest.ProtoRequest([]*ingest.Span{spans[1], &bad}), "application/x-protobuf", false)
	if n, msg := rejected(t, out, false); code != http.StatusOK || n != 1 || !strings.Contains(msg, "missing trace or span id") {
		t.Errorf("partial success: status %d, %d rejected, %q", code, n, msg)
	}
	code, out = rr.post(t, jsonRequest(t, []*ingest.Span{&bad}), "application/json", false)
	if n, _ := rejected(t, out, true); code != http.StatusOK || n != 1 {
		t.Errorf("JSON partial success: status %d, %d rejected: %s", code, n, out)
	}

	for _, c := range []struct {
		name, ct string
		body     []byte
		gz       bool
		want     int
	}{
		{"content type", "text/plain", []byte("x"), false, http.StatusUnsupportedMediaType},
		{"protobuf", "application/x-protobuf", []byte("\x0a\xff\xff\xff\x0f"), false, http.StatusBadRequest},
		{"JSON", "application/json", []byte(`{"resourceSpans": [`), false, http.StatusBadRequest},
		{"gzip", "application/json", []byte("not gzip"), false, http.StatusBadRequest},
		{"too large", "application/json", bytes.Repeat([]byte(" "), 2<<20), true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, rr.srv.URL+"/v1/traces", bytes.NewReader(c.body))
			req.Header.Set("Content-Type", c.ct)
			if c.name == "gzip" {
				req.Header.Set("Content-Encoding", "gzip")
			}
			if c.gz {
				code, out = rr.post(t, c.body, c.ct, true)
			} else {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				out, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
			}
			if code != c.want || len(out) == 0 || bytes.Contains(bytes.TrimSpace(out), []byte("\n")) {
				t.Errorf("status %d, body %q; want %d and a one-line status", code, out, c.want)
			}
			// The body is a google.rpc.Status in the request's encoding.
			st := &spb.Status{}
			var err error
			if c.ct == "application/x-protobuf" {
				err = proto.Unmarshal(out, st)
			} else {
				err = protojson.Unmarshal(out, st)
			}
			if err != nil || codes.Code(st.Code) != codes.InvalidArgument || st.Message == "" {
				t.Errorf("status body %q: %v, code %d", out, err, st.Code)
			}
		})
	}
	if st := rr.Stats(); st.Requests != 9 || st.BadRequests != 5 || st.RejectedSpans != 2 {
		t.Errorf("stats %+v", st)
	}

	// Once stopped, the receiver refuses with a status clients retry.
	handler := rr.Handler()
	if err := rr.stop(); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(ingesttest.ProtoRequest(spans)))
	req.Header.Set("Content-Type", "application/x-protobuf")
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("after stop: status %d, want 503 with Retry-After", rec.Code)
	}
	if err := rr.Run(context.Background()); err == nil {
		t.Error("Run a second time: no error")
	}
}

func TestNewRefusesDamagedState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"perfcast_state": 1, "traces": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), StateFile) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want one line naming the state file", err)
	}
}

func TestReceiveCompletesByTimeNotByCount(t *testing.T) {
	// More spans than a file's assembly waits for (trace.DefaultIdleSpans)
	// complete no trace before the idle time.
	spans := ingesttest.NewGenerator(5).Traces(20000)
	if len(spans) <= 100_000 {
		t.Fatalf("only %d spans", len(spans))
	}
	rr := start(t, Options{Dir: t.TempDir(), Idle: time.Hour, tick: time.Millisecond})
	for _, b := range batches(spans, 10000) {
		if code, out := rr.post(t, ingesttest.ProtoRequest(b), "application/x-protobuf", false); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, out)
		}
	}
	// Run takes in every acknowledged batch before it answers Model.
	if _, _, err := rr.Model(context.Background()); err != ErrNoTraces {
		t.Fatalf("model before the idle time: %v, want %v", err, ErrNoTraces)
	}
	if err := rr.stop(); err != nil {
		t.Fatal(err)
	}
	if st := rr.Stats(); st.Traces != 20000 || st.Assembly.PartialTraces != 0 {
		t.Errorf("at exit: %d traces, %d partial; want 20000 whole", st.Traces, st.Assembly.PartialTraces)
	}
}
