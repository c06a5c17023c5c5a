// Command testbed runs the services of the instrumented example shop (one
// process per service) and its load generator:
//
//	testbed catalog  -listen 127.0.0.1:8082 -db catalog.db -traces catalog.jsonl -metrics catalog.csv
//	testbed payments -listen 127.0.0.1:8084 -delay 10ms
//	testbed orders   -listen 127.0.0.1:8083 -db orders.db -payments http://127.0.0.1:8084
//	testbed gateway  -listen 127.0.0.1:8081 -catalog http://127.0.0.1:8082 -orders http://127.0.0.1:8083
//	testbed load     -url http://127.0.0.1:8081 -rate 50 -steady 60s -o result.json
//
// A service writes its spans as OTLP JSON lines (-traces) and its CPU time
// once a second as CSV (-metrics); it stops cleanly, flushing both, on
// SIGINT or SIGTERM. See docs/testbed.md.
//
// With -runtime-trace F a service also writes a Go execution trace of a
// window of its run (-runtime-trace-after, -runtime-trace-for), which shows
// when its goroutines waited to run.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/perfcast/perfcast/examples/testbed/cpusampler"
	"github.com/perfcast/perfcast/examples/testbed/loadgen"
	"github.com/perfcast/perfcast/examples/testbed/shop"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "gateway", "catalog", "orders", "payments":
		err = serve(ctx, cmd, args)
	case "seed":
		err = seed(ctx, args)
	case "load":
		err = load(ctx, args)
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "testbed: unknown command %q\n", cmd)
		usage()
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: testbed gateway|catalog|orders|payments [flags]   run one service
       testbed seed -catalog-db F -orders-db F                  create the databases
       testbed load -url URL (-rate R | -users N -think D) [flags]
Run "testbed COMMAND -h" for a command's flags.`)
}

// sizeFlag selects the size of the data set.
func sizeFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("small", false, "a small data set (tests and smoke runs) instead of the default one")
}

func size(small bool) shop.Size {
	if small {
		return shop.Size{Products: 2000, Reviews: 10000, Customers: 1000, PastOrders: 2000}
	}
	return shop.DefaultSize
}

func serve(ctx context.Context, name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	host, _ := os.Hostname()
	var (
		listen    = fs.String("listen", "127.0.0.1:0", "address to listen on")
		addrFile  = fs.String("addr-file", "", "write the address listened on to this `file` once listening (with -listen on port 0)")
		traces    = fs.String("traces", "", "write spans to this `file` as OTLP JSON lines")
		metrics   = fs.String("metrics", "", "write the process's CPU time to this `file` once a second (CSV)")
		procsBusy = fs.String("procs-busy", "", "write the time the Go runtime's processors were busy (held, whether running or waiting for a CPU) to this `file` once a second (CSV; the runtime updates it at each garbage collection)")
		procsAll  = fs.String("procs-total", "", "write the time the Go runtime's processors were there (GOMAXPROCS times the time run) to this `file` once a second, as -procs-busy")
		hostName  = fs.String("host", host, "the host.name resource attribute and the metrics' host column")
		instance  = fs.String("instance", "", "the service.instance.id resource attribute (default: service name and process id)")
		spanCPU   = fs.Bool("span-cpu", true, "record perfcast.cpu.time on server and consumer spans")
		dbPath    = fs.String("db", name+".db", "SQLite database `file` (catalog, orders)")
		catalog   = fs.String("catalog", "http://127.0.0.1:8082", "catalog base URL (gateway)")
		orders    = fs.String("orders", "http://127.0.0.1:8083", "orders base URL (gateway)")
		payments  = fs.String("payments", "http://127.0.0.1:8084", "payments base URL (orders)")
		pool      = fs.Int("pool", 8, "workers of the recommendation fan-out pool (gateway)")
		fanOut    = fs.Int("fanout", 6, "products per recommendation page (gateway)")
		coarse    = fs.Bool("coarse-lock", true, "hold the stock mutex across the payment call (orders)")
		consumers = fs.Int("consumers", 2, "confirmation consumer goroutines (orders)")
		delay     = fs.Duration("delay", 10*time.Millisecond, "how long a charge takes (payments)")
		conns     = fs.Int("db-conns", 4, "database connections (catalog; orders uses 1 writer)")
		small     = sizeFlag(fs)
		rtPath    = fs.String("runtime-trace", "", "write a Go execution trace (runtime/trace) of the run to this `file`, for `go tool trace`")
		rtAfter   = fs.Duration("runtime-trace-after", 0, "start the execution trace this long after the service starts")
		rtFor     = fs.Duration("runtime-trace-for", 0, "stop the execution trace after this long (0: when the service stops)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rtPath != "" {
		rt, err := startRuntimeTrace(*rtPath, *rtAfter, *rtFor)
		if err != nil {
			return err
		}
		defer func() {
			if err := rt.Stop(); err != nil {
				slog.Error("stopping the execution trace", "err", err)
			}
		}()
	}
	if *instance == "" {
		*instance = fmt.Sprintf("%s-%d", name, os.Getpid())
	}
	sz := size(*small)
	tel, err := shop.NewTelemetry(shop.TelemetryConfig{Service: name, Host: *hostName, Instance: *instance, TraceFile: *traces, SpanCPU: *spanCPU})
	if err != nil {
		return err
	}
	var handler http.Handler
	var closeService func()
	switch name {
	case "catalog":
		db, err := shop.OpenDB(*dbPath, *conns)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := shop.SeedCatalog(ctx, db, sz); err != nil {
			return err
		}
		handler = shop.NewCatalog(db, tel).Handler()
	case "orders":
		db, err := shop.OpenDB(*dbPath, 1)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := shop.SeedOrders(ctx, db, sz); err != nil {
			return err
		}
		o := shop.NewOrders(db, shop.OrdersConfig{PaymentsURL: *payments, CoarseLock: *coarse, Consumers: *consumers, Products: sz.Products}, tel)
		handler, closeService = o.Handler(), o.Close
	case "payments":
		handler = shop.NewPayments(*delay, tel).Handler()
	case "gateway":
		g := shop.NewGateway(shop.GatewayConfig{CatalogURL: *catalog, OrdersURL: *orders, PoolSize: *pool, FanOut: *fanOut, Products: sz.Products}, tel)
		handler, closeService = g.Handler(), g.Close
	}

	samplers := []struct {
		flag, path string
		clock      func() (time.Duration, error)
	}{{"metrics", *metrics, cpusampler.ProcessCPU}, {"procs-busy", *procsBusy, cpusampler.ProcessorsBusy}, {"procs-total", *procsAll, cpusampler.ProcessorsTotal}}
	samplerDone := make(chan error, len(samplers))
	samplerCtx, stopSampler := context.WithCancel(context.Background())
	defer stopSampler()
	for _, s := range samplers {
		if s.path == "" {
			samplerDone <- nil
			continue
		}
		f, err := os.Create(s.path)
		if err != nil {
			return fmt.Errorf("%s: %w", s.flag, err)
		}
		defer f.Close()
		go func() { samplerDone <- cpusampler.RunClock(samplerCtx, f, *hostName, time.Second, s.clock) }()
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		stopSampler()
		return err
	}
	if *addrFile != "" {
		if err := writeAddr(*addrFile, ln.Addr().String()); err != nil {
			ln.Close()
			stopSampler()
			return err
		}
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	slog.Info("serving", "service", name, "addr", ln.Addr().String(), "span_cpu", *spanCPU)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		stopSampler()
		return err
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := []error{srv.Shutdown(shutdown)}
	if closeService != nil {
		closeService()
	}
	errs = append(errs, tel.Shutdown(shutdown))
	stopSampler()
	for range samplers {
		errs = append(errs, <-samplerDone)
	}
	return errors.Join(errs...)
}

// writeAddr writes addr to path whole: to a temporary file first, renamed,
// so that a reader never sees part of it.
func writeAddr(path, addr string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("addr-file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("addr-file: %w", err)
	}
	return nil
}

func seed(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	catalogDB := fs.String("catalog-db", "catalog.db", "catalog database `file`")
	ordersDB := fs.String("orders-db", "orders.db", "orders database `file`")
	small := sizeFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range []struct {
		path string
		fill func(context.Context, *sql.DB, shop.Size) error
	}{{*catalogDB, shop.SeedCatalog}, {*ordersDB, shop.SeedOrders}} {
		db, err := shop.OpenDB(s.path, 1)
		if err != nil {
			return err
		}
		err = s.fill(ctx, db, size(*small))
		db.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var (
		url      = fs.String("url", "http://127.0.0.1:8081", "the gateway's base URL")
		rate     = fs.Float64("rate", 0, "open workload: arrivals per second in the steady phase")
		users    = fs.Int("users", 0, "closed workload: users in the steady phase")
		think    = fs.Duration("think", time.Second, "closed workload: mean think time (exponential)")
		rampUp   = fs.Duration("ramp-up", 10*time.Second, "ramp-up phase")
		steady   = fs.Duration("steady", 60*time.Second, "steady phase (the one measured)")
		rampDown = fs.Duration("ramp-down", 5*time.Second, "ramp-down phase")
		mixFlag  = fs.String("mix", shop.FormatMix(shop.DefaultMix), "request mix: class=weight,...")
		seedFlag = fs.Uint64("seed", 1, "random seed")
		out      = fs.String("o", "-", "write the result JSON to this `file` (- for standard output)")
		keep     = fs.Bool("keep-requests", false, "write every steady-phase request into the result (for merging runs)")
		small    = sizeFlag(fs)
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	mix, err := shop.ParseMix(*mixFlag)
	if err != nil {
		return err
	}
	res, err := loadgen.Run(ctx, loadgen.Config{
		BaseURL: *url, Classes: shop.Classes(mix, size(*small)),
		Phases: loadgen.Phases{RampUp: *rampUp, Steady: *steady, RampDown: *rampDown},
		Rate:   *rate, Users: *users, Think: *think, Seed: *seedFlag,
		KeepRequests: *keep,
	})
	if err != nil {
		return err
	}
	if used, err := cpusampler.ProcessCPU(); err == nil {
		res.CPUSeconds = used.Seconds()
	}
	var w io.Writer = os.Stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
