package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/perfcast/perfcast/extract"
	"github.com/perfcast/perfcast/receive"
)

func newReceiveCmd(g *globalFlags) *cobra.Command {
	var (
		listen, grpcListen, dir, configPath, name string
		metrics                                   []string
		idle, checkpoint                          time.Duration
		maxBody                                   int64
	)
	cmd := &cobra.Command{
		Use:   "receive --listen ADDR --state DIR",
		Short: "Receive traces over OTLP and keep the extraction state on disk",
		Long: `Receive spans as an OpenTelemetry Collector's otlphttp exporter, or an SDK's
OTLP/HTTP exporter, sends them (POST /v1/traces, protobuf or JSON, gzip or
not), and over OTLP/gRPC with --grpc-listen; assemble them into call trees,
fold the trees into an extraction state and keep it in DIR:

  DIR/state.json.gz  the extraction state, saved every --checkpoint and at exit
  DIR/model.yaml     the model made from it at those times
  DIR/report.json    that model's extraction report

A trace is complete once none of its spans arrived for --idle; traces still
open at exit are folded as they are. Started again on the same DIR, receive
goes on from the saved state. GET /model serves the model of what was
received so far, GET /stats the counts. Stop it with Ctrl-C (or SIGTERM):
it answers the requests in flight, folds what it has, and writes DIR.

Make a model from saved states at any time, merging several receivers'
(one per shard of a Collector's load-balancing exporter, routed by trace id):

  perfcast extract --state DIR1 --state DIR2 -o model.yaml`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("receive needs --state DIR, the directory to keep the extraction state in")
			}
			cfg, err := extractConfig(configPath, metrics)
			if err != nil {
				return err
			}
			if name == "" {
				name = filepath.Base(filepath.Clean(dir))
			}
			return runReceiver(cmd.Context(), listen, grpcListen, receive.Options{
				Dir: dir, Config: cfg, Name: name, Idle: idle, Checkpoint: checkpoint,
				MaxBodyBytes: maxBody, Logger: slog.Default(),
			}, g, cmd)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:4318", "serve OTLP/HTTP on this `address`")
	cmd.Flags().StringVar(&grpcListen, "grpc-listen", "", "also serve OTLP/gRPC on this `address` (such as 127.0.0.1:4317)")
	cmd.Flags().StringVar(&dir, "state", "", "keep the extraction state (and the model) in this `directory`")
	cmd.Flags().StringVar(&configPath, "config", "", "extraction configuration `file` (component names, parameters, sessions, hosts' cores)")
	cmd.Flags().StringArrayVar(&metrics, "metrics", nil, "utilization metrics `file` read when a model is made; repeatable")
	cmd.Flags().StringVar(&name, "name", "", "the model's name (default: the state directory's name)")
	cmd.Flags().DurationVar(&idle, "idle", receive.DefaultIdle, "a trace is complete when no span of it arrived for this `long`")
	cmd.Flags().DurationVar(&checkpoint, "checkpoint", receive.DefaultCheckpoint, "save the state and the model this `often`")
	cmd.Flags().Int64Var(&maxBody, "max-body", receive.DefaultMaxBodyBytes, "refuse requests larger than this many `bytes` (decompressed)")
	return cmd
}

// runReceiver serves the receiver until ctx is done, then stops the
// servers (answering the requests in flight) and lets the receiver fold
// and save what it has.
func runReceiver(ctx context.Context, listen, grpcListen string, opts receive.Options, g *globalFlags, cmd *cobra.Command) error {
	r, err := receive.New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	var gln net.Listener
	if grpcListen != "" {
		if gln, err = net.Listen("tcp", grpcListen); err != nil {
			ln.Close()
			return fmt.Errorf("receive: %w", err)
		}
	}
	srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 10 * time.Second}
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	gsrv := r.GRPCServer()
	if gln != nil {
		go func() { served <- gsrv.Serve(gln) }()
	}
	if !g.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "perfcast: receiving OTLP/HTTP on http://%s/v1/traces", ln.Addr())
		if gln != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), " and OTLP/gRPC on %s", gln.Addr())
		}
		fmt.Fprintf(cmd.ErrOrStderr(), ", state in %s\n", opts.Dir)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		slog.Warn("requests still in flight at exit", "error", err)
	}
	stopGRPC(shutdown, gsrv)
	stopRun()
	err = <-done
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(fmt.Errorf("receive: %w", serveErr), err)
	}
	if err != nil {
		return err
	}
	st := r.Stats()
	if !g.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "perfcast: received %d spans (%d rejected) in %d requests, %d traces folded; state and model in %s\n",
			st.Spans, st.RejectedSpans, st.Requests, st.Traces, opts.Dir)
	}
	return nil
}

// stopGRPC stops the gRPC server gracefully, or at once when ctx ends
// first.
func stopGRPC(ctx context.Context, s *grpc.Server) {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.Stop()
		slog.Warn("gRPC requests still in flight at exit")
	}
}

// loadStates reads the states saved by perfcast receive in each directory
// (or state file) given.
func loadStates(paths []string) ([]*extract.State, error) {
	var out []*extract.State
	for _, p := range paths {
		st, err := receive.LoadState(p)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}
