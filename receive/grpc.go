package receive

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the compressor Collectors' otlp exporter uses by default
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/perfcast/perfcast/ingest"
)

// GRPCServer returns a gRPC server with the OTLP trace service, which
// takes exports into the receiver as the HTTP handler does. Its messages
// are bounded by Options.MaxBodyBytes.
func (r *Receiver) GRPCServer() *grpc.Server {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(int(min(r.opts.MaxBodyBytes, 1<<31-1))))
	ptraceotlp.RegisterGRPCServer(s, &traceService{r: r})
	return s
}

// traceService is the OTLP/gRPC trace service.
type traceService struct {
	ptraceotlp.UnimplementedGRPCServer
	r *Receiver
}

// Export takes one request: spans rejected one by one are counted in the
// response's partial success; once the receiver stops, it answers
// Unavailable, which exporters retry.
func (t *traceService) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	r := t.r
	r.requests.Add(1)
	source := "gRPC request"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		source += " from " + p.Addr.String()
	}
	spans, st := ingest.ConvertTraces(req.Traces(), source, ingest.Options{Attributes: r.opts.Config.Attributes()})
	resp, err := r.take(ctx, spans, st)
	if err != nil {
		return resp, status.Error(codes.Unavailable, err.Error())
	}
	return resp, nil
}
