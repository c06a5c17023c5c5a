package shop

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var testSize = Size{Products: 500, Reviews: 3000, Customers: 100, PastOrders: 200}

// testShop runs the four services in-process, each on its own test
// server, all recording spans into rec.
type testShop struct {
	rec                   *tracetest.SpanRecorder
	gateway               *httptest.Server
	ordersDB, catalogDB   *sql.DB
	orders                *Orders
	gw                    *Gateway
	charging, maxCharging atomic.Int64
	stopOnce              sync.Once
}

func newTestShop(t *testing.T, coarse bool) *testShop {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	s := &testShop{rec: tracetest.NewSpanRecorder()}
	tel := func(name string) *Telemetry {
		tl, err := NewTelemetry(TelemetryConfig{Service: name, Host: "h", Instance: name, Processor: s.rec, SpanCPU: true})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	var err error
	if s.catalogDB, err = OpenDB(filepath.Join(dir, "catalog.db"), 2); err != nil {
		t.Fatal(err)
	}
	if err := SeedCatalog(ctx, s.catalogDB, testSize); err != nil {
		t.Fatal(err)
	}
	if s.ordersDB, err = OpenDB(filepath.Join(dir, "orders.db"), 1); err != nil {
		t.Fatal(err)
	}
	if err := SeedOrders(ctx, s.ordersDB, testSize); err != nil {
		t.Fatal(err)
	}
	pay := NewPayments(5*time.Millisecond, tel("payments")).Handler()
	payments := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.charging.Add(1)
		for {
			m := s.maxCharging.Load()
			if n <= m || s.maxCharging.CompareAndSwap(m, n) {
				break
			}
		}
		defer s.charging.Add(-1)
		pay.ServeHTTP(w, r)
	}))
	catalog := httptest.NewServer(NewCatalog(s.catalogDB, tel("catalog")).Handler())
	s.orders = NewOrders(s.ordersDB, OrdersConfig{PaymentsURL: payments.URL, CoarseLock: coarse, Products: testSize.Products}, tel("orders"))
	orders := httptest.NewServer(s.orders.Handler())
	s.gw = NewGateway(GatewayConfig{CatalogURL: catalog.URL, OrdersURL: orders.URL, PoolSize: 2, FanOut: 6, Products: testSize.Products}, tel("gateway"))
	s.gateway = httptest.NewServer(s.gw.Handler())
	t.Cleanup(func() {
		s.gateway.Close()
		orders.Close()
		catalog.Close()
		payments.Close()
		s.shutdown()
		s.catalogDB.Close()
		s.ordersDB.Close()
	})
	return s
}

// shutdown stops the gateway's pool and drains the orders queue, once.
func (s *testShop) shutdown() {
	s.stopOnce.Do(func() {
		s.gw.Close()
		s.orders.Close()
	})
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestShop(t *testing.T) {
	s := newTestShop(t, true)
	base := s.gateway.URL

	code, body := do(t, "GET", base+"/catalog/7", "")
	if code != 200 || !strings.Contains(body, "<h1>Category 7</h1>") {
		t.Fatalf("GET /catalog/7: %d %.200s", code, body)
	}
	if n := strings.Count(body, `<li id="p`); n != testSize.Products/Categories {
		t.Fatalf("catalog page lists %d products, want %d", n, testSize.Products/Categories)
	}

	code, body = do(t, "GET", base+"/recommend/alice", "")
	if code != 200 {
		t.Fatalf("GET /recommend/alice: %d %.200s", code, body)
	}
	for _, id := range Recommended("alice", 6, testSize.Products) {
		if !strings.Contains(body, `<li id="p`+itoa(id)+`"`) {
			t.Fatalf("recommendation page lacks product %d", id)
		}
	}

	code, body = do(t, "POST", base+"/orders", `{"customer": 5, "items": [{"product": 3, "qty": 2}, {"product": 9, "qty": 1}]}`)
	if code != http.StatusCreated {
		t.Fatalf("POST /orders: %d %s", code, body)
	}
	var placed Placed
	if err := json.Unmarshal([]byte(body), &placed); err != nil {
		t.Fatal(err)
	}
	if placed.Order <= int64(testSize.PastOrders) || len(placed.Receipt) != 64 || placed.Auth == "" {
		t.Fatalf("placed %+v", placed)
	}
	if want := 2*Price(3) + Price(9); placed.TotalCents != want && placed.TotalCents != want-want/20 {
		t.Fatalf("total %d, want %d (or with the loyalty discount)", placed.TotalCents, want)
	}
	for _, bad := range []struct {
		body string
		code int
	}{{`{`, 400}, {`{"customer": 5, "items": []}`, 400}, {`{"customer": 5, "items": [{"product": 100000, "qty": 1}]}`, 400}} {
		if code, body := do(t, "POST", base+"/orders", bad.body); code != bad.code {
			t.Errorf("POST /orders %s: %d %s, want %d", bad.body, code, body, bad.code)
		}
	}
	if code, _ := do(t, "GET", base+"/catalog/x", ""); code != 400 {
		t.Errorf("GET /catalog/x: %d, want 400", code)
	}

	s.shutdown()
	var sent int
	if err := s.ordersDB.QueryRow("SELECT COUNT(*) FROM notifications WHERE order_id = ?", placed.Order).Scan(&sent); err != nil || sent != 1 {
		t.Fatalf("confirmations recorded for order %d: %d (%v), want 1", placed.Order, sent, err)
	}
	checkSpans(t, s.rec.Ended())
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// checkSpans checks the traces' shape: named, routed server spans with CPU
// time; the confirmation's CONSUMER span a child of the PRODUCER span, in
// the order's trace.
func checkSpans(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
	}
	attr := func(sp sdktrace.ReadOnlySpan, key string) (string, float64, bool) {
		for _, kv := range sp.Attributes() {
			if string(kv.Key) == key {
				return kv.Value.String(), kv.Value.AsFloat64(), true
			}
		}
		return "", 0, false
	}
	for name, route := range map[string]string{
		"GET /catalog/{category}": "/catalog/{category}", "GET /recommend/{user}": "/recommend/{user}",
		"POST /orders": "/orders", "GET /products": "/products", "GET /products/{id}": "/products/{id}", "POST /charge": "/charge",
	} {
		list := byName[name]
		if len(list) == 0 {
			t.Fatalf("no span named %q (have %v)", name, keys(byName))
		}
		for _, sp := range list {
			if sp.SpanKind() != trace.SpanKindServer {
				continue
			}
			if r, _, _ := attr(sp, "http.route"); r != route {
				t.Errorf("%s: http.route %q, want %q", name, r, route)
			}
			if _, cpu, ok := attr(sp, "perfcast.cpu.time"); !ok || cpu <= 0 {
				t.Errorf("%s: perfcast.cpu.time %g (present %v)", name, cpu, ok)
			}
		}
	}
	prods, cons := byName["order-confirmations publish"], byName["order-confirmations process"]
	if len(prods) != 1 || len(cons) != 1 {
		t.Fatalf("%d producer and %d consumer spans, want 1 each", len(prods), len(cons))
	}
	p, c := prods[0], cons[0]
	if p.SpanKind() != trace.SpanKindProducer || c.SpanKind() != trace.SpanKindConsumer {
		t.Fatalf("kinds %v, %v", p.SpanKind(), c.SpanKind())
	}
	if c.Parent().SpanID() != p.SpanContext().SpanID() || c.SpanContext().TraceID() != p.SpanContext().TraceID() {
		t.Fatal("the consumer span is not a child of the producer span")
	}
	if _, cpu, ok := attr(c, "perfcast.cpu.time"); !ok || cpu <= 0 {
		t.Errorf("consumer span: perfcast.cpu.time %g (present %v)", cpu, ok)
	}
	inTrace := 0
	for _, sp := range byName["POST /orders"] {
		if sp.SpanContext().TraceID() == p.SpanContext().TraceID() {
			inTrace++
		}
	}
	if inTrace != 2 {
		t.Fatalf("%d POST /orders server spans (gateway, orders) in the producer's trace, want 2", inTrace)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The catalog's listing agrees with ratings computed here from the review
// rows: each product's count and mean, best first.
func TestCatalogListing(t *testing.T) {
	s := newTestShop(t, true)
	catalog := httptest.NewServer(NewCatalog(s.catalogDB, mustTel(t)).Handler())
	defer catalog.Close()
	code, body := do(t, "GET", catalog.URL+"/products?category=4", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var ps []Product
	if err := json.Unmarshal([]byte(body), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps) != testSize.Products/Categories {
		t.Fatalf("%d products, want %d", len(ps), testSize.Products/Categories)
	}
	for i, p := range ps {
		if p.Category != 4 {
			t.Fatalf("product %d in category %d", p.ID, p.Category)
		}
		rows, err := s.catalogDB.Query("SELECT rating FROM reviews WHERE product_id = ?", p.ID)
		if err != nil {
			t.Fatal(err)
		}
		n, sum := 0, 0
		for rows.Next() {
			var r int
			rows.Scan(&r)
			n++
			sum += r
		}
		rows.Close()
		if n != p.Reviews || (n > 0 && float64(sum)/float64(n)-p.Rating > 1e-9) || (n > 0 && p.Rating-float64(sum)/float64(n) > 1e-9) {
			t.Fatalf("product %d: %d reviews mean %g, listing says %d, %g", p.ID, n, float64(sum)/float64(max(n, 1)), p.Reviews, p.Rating)
		}
		if i > 0 && ps[i-1].Rating < p.Rating {
			t.Fatalf("listing not ordered by rating at %d", i)
		}
	}
	if code, _ := do(t, "GET", catalog.URL+"/products/0", ""); code != 404 {
		t.Fatalf("GET /products/0: %d, want 404", code)
	}
}

func mustTel(t *testing.T) *Telemetry {
	tl, err := NewTelemetry(TelemetryConfig{Service: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// With the coarse lock, concurrent orders never charge at the same time.
func TestCoarseLockSerializesCharges(t *testing.T) {
	s := newTestShop(t, true)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(Order{Customer: 1 + i, Items: []OrderItem{{Product: 1 + i, Qty: 1}}})
			resp, err := http.Post(s.gateway.URL+"/orders", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	if m := s.maxCharging.Load(); m != 1 {
		t.Fatalf("%d charges at once under the coarse lock, want 1", m)
	}
}

// The pool never runs more tasks at once than it has workers, and runs
// them all.
func TestPool(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var running, peak, done atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks := make([]func(), 5)
			for i := range tasks {
				tasks[i] = func() {
					n := running.Add(1)
					for {
						m := peak.Load()
						if n <= m || peak.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(time.Millisecond)
					running.Add(-1)
					done.Add(1)
				}
			}
			if err := p.Run(context.Background(), tasks); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if done.Load() != 20 || peak.Load() > 3 {
		t.Fatalf("%d tasks done, peak %d running: want 20 and at most 3", done.Load(), peak.Load())
	}
}

func TestMix(t *testing.T) {
	m, err := ParseMix("browse=6,recommend=2,order=2")
	if err != nil || FormatMix(m) != "browse=6,order=2,recommend=2" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"browse", "browse=-1", "nope=1", "browse=x"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	if cs := Classes(map[string]float64{"browse": 1, "order": 0}, testSize); len(cs) != 1 || cs[0].Name != "browse" {
		t.Fatalf("classes %+v", cs)
	}
}

func TestRecommended(t *testing.T) {
	a := Recommended("bob", 6, 500)
	b := Recommended("bob", 6, 500)
	seen := map[int]bool{}
	for i, id := range a {
		if id != b[i] || id < 1 || id > 500 || seen[id] {
			t.Fatalf("Recommended: %v, %v", a, b)
		}
		seen[id] = true
	}
	if len(Recommended("x", 10, 3)) != 3 {
		t.Fatal("more products recommended than exist")
	}
}
