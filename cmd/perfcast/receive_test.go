package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/perfcast/perfcast/ingest/ingesttest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// receiver runs perfcast receive until stop is called, which returns its
// exit status and standard error.
func receiver(t *testing.T, dir string, extra ...string) (url string, stop func() (int, string)) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	code := make(chan int, 1)
	args := append([]string{"receive", "--listen", addr, "--state", dir, "--idle", "1h"}, extra...)
	go func() { code <- run(ctx, args, &out, &errb) }()
	url = "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case c := <-code:
			t.Fatalf("receive exited with %d: %s", c, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("receive does not answer: %v: %s", err, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	var c int
	stop = func() (int, string) {
		once.Do(func() {
			cancel()
			c = <-code
		})
		return c, errb.String()
	}
	t.Cleanup(func() { stop() })
	return url, stop
}

func TestReceiveThenExtract(t *testing.T) {
	// Two receivers take the first and the second half of the traces, one
	// over HTTP, one over gRPC; the model made from their states is the
	// model of the traces as a file.
	spans := ingesttest.NewGenerator(6).Traces(300)
	cut := len(spans) / 2
	for cut < len(spans) && spans[cut].TraceID == spans[cut-1].TraceID {
		cut++
	}
	dir := t.TempDir()
	var file bytes.Buffer
	if err := ingesttest.WriteOTLPJSON(&file, spans, 25); err != nil {
		t.Fatal(err)
	}
	traces := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(traces, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first over OTLP/HTTP.
	url, stop := receiver(t, filepath.Join(dir, "a"))
	resp, err := http.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(ingesttest.ProtoRequest(spans[:cut])))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: status %d", resp.StatusCode)
	}
	stops := []func() (int, string){stop}
	// The second over OTLP/gRPC.
	grpcAddr := freeAddr(t)
	_, stop = receiver(t, filepath.Join(dir, "b"), "--grpc-listen", grpcAddr)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(ingesttest.ProtoRequest(spans[cut:])); err != nil {
		t.Fatal(err)
	}
	if _, err := ptraceotlp.NewGRPCClient(conn).Export(context.Background(), req); err != nil {
		t.Fatalf("gRPC export: %v", err)
	}
	stops = append(stops, stop)
	for _, stop := range stops {
		code, errs := stop()
		if code != 0 || !strings.Contains(errs, "traces folded") {
			t.Fatalf("receive: exit %d: %s", code, errs)
		}
	}
	merged, whole := filepath.Join(dir, "merged.yaml"), filepath.Join(dir, "whole.yaml")
	if code, _, errs := perfcast(t, "extract", "--state", filepath.Join(dir, "a"), "--state", filepath.Join(dir, "b"), "--name", "shop", "-o", merged); code != 0 {
		t.Fatalf("extract --state: exit %d: %s", code, errs)
	}
	if code, _, errs := perfcast(t, "extract", traces, "--name", "shop", "-o", whole); code != 0 {
		t.Fatalf("extract: exit %d: %s", code, errs)
	}
	m1, _ := os.ReadFile(merged)
	m2, _ := os.ReadFile(whole)
	if !bytes.Equal(m1, m2) {
		t.Errorf("model of the receivers' states:\n%s\nmodel of the file:\n%s", m1, m2)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"receive"}, 2, "--state"},
		{[]string{"extract", "-o", merged}, 2, "TRACES or --state"},
		{[]string{"extract", "--state", filepath.Join(dir, "none"), "-o", merged}, 1, "none"},
	} {
		code, _, errs := perfcast(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}
