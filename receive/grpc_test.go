package receive

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/perfcast/perfcast/ingest"
	"github.com/perfcast/perfcast/ingest/ingesttest"
)

func TestReceiveGRPC(t *testing.T) {
	// The same traces over OTLP/gRPC give the model extraction gives
	// from a file.
	spans := ingesttest.NewGenerator(8).Traces(300)
	dir := t.TempDir()
	rr := start(t, Options{Dir: dir, Name: "shop", Idle: time.Hour})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rr.GRPCServer()
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	export := func(batch []*ingest.Span, opts ...grpc.CallOption) (ptraceotlp.ExportResponse, error) {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(ingesttest.ProtoRequest(batch)); err != nil {
			t.Fatal(err)
		}
		return client.Export(context.Background(), req, opts...)
	}
	for i, b := range batches(spans, 100) {
		var opts []grpc.CallOption
		if i%2 == 1 {
			// gzip, as a Collector's otlp exporter sends by default.
			opts = append(opts, grpc.UseCompressor("gzip")) // registered by the receiver's own import
		}
		resp, err := export(b, opts...)
		if err != nil || resp.PartialSuccess().RejectedSpans() != 0 {
			t.Fatalf("export: %v, %d rejected", err, resp.PartialSuccess().RejectedSpans())
		}
	}
	// A span without ids is rejected, counted in the partial success.
	bad := *spans[0]
	bad.SpanID = ingest.SpanID{}
	resp, err := export([]*ingest.Span{&bad})
	if err != nil || resp.PartialSuccess().RejectedSpans() != 1 || resp.PartialSuccess().ErrorMessage() == "" {
		t.Errorf("partial success: %v, %d rejected, %q", err, resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage())
	}
	if err := rr.stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := readModel(t, dir), extracted(t, spans, "shop"); !bytes.Equal(got, want) {
		t.Errorf("received over gRPC:\n%s\nextracted from a file:\n%s", got, want)
	}
	// Once stopped, exports are refused with a code exporters retry.
	if _, err := export(spans[:1]); status.Code(err) != codes.Unavailable {
		t.Errorf("after stop: %v, want Unavailable", err)
	}
}
