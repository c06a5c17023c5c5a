// Package shop is a small online shop made of four services, each meant to
// run in its own process, instrumented with OpenTelemetry:
//
//   - gateway: the public HTTP API; renders HTML pages from the catalog's
//     data, fans requests for recommendations out to the catalog through a
//     bounded worker pool, and forwards orders;
//   - catalog: products and reviews in an SQLite database (tens of thousands
//     of rows), served as JSON after joins and aggregates;
//   - orders: validates an order against its own SQLite tables, reserves
//     stock in a mutex-guarded in-memory structure, charges the payment
//     service, records the order, and hands a confirmation to a queue whose
//     consumer goroutines render and sign an e-mail (traced as PRODUCER and
//     CONSUMER spans, the context carried in the message);
//   - payments: a deliberately slow dependency (it sleeps: time off the CPU).
//
// Server spans carry perfcast.cpu.time, the CPU time of the serving
// goroutine (package cputime), unless that is switched off.
package shop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/perfcast/perfcast/examples/testbed/cputime"
	"github.com/perfcast/perfcast/examples/testbed/otlpfile"
)

// TelemetryConfig says how a service is traced.
type TelemetryConfig struct {
	// Service, Host and Instance become the resource attributes
	// service.name, host.name and service.instance.id.
	Service, Host, Instance string
	// TraceFile receives the spans as OTLP JSON lines; empty: spans are
	// made but not written (unless Processor is set).
	TraceFile string
	// Processor, when set, receives the spans instead (tests).
	Processor sdktrace.SpanProcessor
	// SpanCPU records perfcast.cpu.time on server and consumer spans.
	SpanCPU bool
}

// Telemetry is a service's tracing: its provider, tracer and propagator.
type Telemetry struct {
	cfg        TelemetryConfig
	Provider   *sdktrace.TracerProvider
	Tracer     trace.Tracer
	Propagator propagation.TextMapPropagator
}

// NewTelemetry sets up tracing for one service.
func NewTelemetry(cfg TelemetryConfig) (*Telemetry, error) {
	if cfg.Service == "" {
		return nil, errors.New("shop: telemetry needs a service name")
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", cfg.Service),
		attribute.String("host.name", cfg.Host),
		attribute.String("service.instance.id", cfg.Instance),
	)
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample())}
	switch {
	case cfg.Processor != nil:
		opts = append(opts, sdktrace.WithSpanProcessor(cfg.Processor))
	case cfg.TraceFile != "":
		exp, err := otlpfile.Create(cfg.TraceFile)
		if err != nil {
			return nil, fmt.Errorf("shop: %s traces: %w", cfg.Service, err)
		}
		// A queue large enough that no span is dropped at the loads the
		// testbed runs; batches written every second.
		opts = append(opts, sdktrace.WithBatcher(exp,
			sdktrace.WithMaxQueueSize(1<<16),
			sdktrace.WithMaxExportBatchSize(4096),
			sdktrace.WithBatchTimeout(time.Second)))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Telemetry{
		cfg:        cfg,
		Provider:   tp,
		Tracer:     tp.Tracer("github.com/perfcast/perfcast/examples/testbed/shop"),
		Propagator: propagation.TraceContext{},
	}, nil
}

// Shutdown writes the spans still buffered and closes the trace file.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if err := t.Provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("shop: %s: flush traces: %w", t.cfg.Service, err)
	}
	return nil
}

// SpanCPU reports whether spans carry their CPU time.
func (t *Telemetry) SpanCPU() bool { return t.cfg.SpanCPU }

// Handler wraps a service's routes: a server span per request, named
// "METHOD route" with the attribute http.route once the mux has matched
// the route, and the request's CPU time on it. /healthz is not traced.
func (t *Telemetry) Handler(mux *http.ServeMux) http.Handler {
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		if route := route(r.Pattern); route != "" {
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", route))
		}
	})
	return otelhttp.NewHandler(cputime.Middleware(routed, t.cfg.SpanCPU), t.cfg.Service,
		otelhttp.WithTracerProvider(t.Provider),
		otelhttp.WithPropagators(t.Propagator),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthz" }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if rt := route(r.Pattern); rt != "" {
				return r.Method + " " + rt
			}
			return r.Method
		}))
}

// route is the path part of a ServeMux pattern ("GET /x/{id}" → "/x/{id}").
func route(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = pattern[i+1:]
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // drop a host
	}
	return pattern
}

// Client returns an HTTP client whose requests are CLIENT spans carrying
// the trace context to the server.
func (t *Telemetry) Client() *http.Client {
	return &http.Client{
		Transport: otelhttp.NewTransport(
			&http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute},
			otelhttp.WithTracerProvider(t.Provider),
			otelhttp.WithPropagators(t.Propagator)),
		Timeout: 30 * time.Second,
	}
}
