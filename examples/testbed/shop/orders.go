package shop

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/perfcast/perfcast/examples/testbed/cputime"
)

// OrdersConfig configures the orders service.
type OrdersConfig struct {
	PaymentsURL string
	// CoarseLock holds the stock mutex across the call to payments, so
	// that charges are serialized (the default in the testbed's reference
	// configuration); otherwise the mutex guards only the in-memory
	// updates.
	CoarseLock bool
	// Consumers is the number of goroutines that send confirmations
	// (default 2); QueueSize bounds the confirmations waiting (default
	// 10000; a full queue makes the order wait).
	Consumers, QueueSize int
	// Products is the number of products (default DefaultSize.Products).
	Products int
}

// Orders is the orders service.
type Orders struct {
	cfg    OrdersConfig
	db     *sql.DB
	tel    *Telemetry
	client *http.Client
	queue  chan message
	wg     sync.WaitGroup

	// mu guards the stock levels and the receipt chain, shared by all
	// requests.
	mu    sync.Mutex
	stock map[int]int
	chain [sha256.Size]byte
}

// message is a confirmation to send, with the trace context of the order
// that published it.
type message struct {
	carrier propagation.MapCarrier
	order   int64
	email   string
	name    string
	total   int64
	items   []OrderItem
}

// NewOrders returns the orders service over a seeded database and starts
// its consumers; Close stops them after the queue is drained.
func NewOrders(db *sql.DB, cfg OrdersConfig, tel *Telemetry) *Orders {
	if cfg.Consumers <= 0 {
		cfg.Consumers = 2
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 10000
	}
	if cfg.Products <= 0 {
		cfg.Products = DefaultSize.Products
	}
	o := &Orders{cfg: cfg, db: db, tel: tel, client: tel.Client(), queue: make(chan message, cfg.QueueSize), stock: map[int]int{}}
	for range cfg.Consumers {
		o.wg.Add(1)
		go o.consume()
	}
	return o
}

// Close stops accepting confirmations and waits until those queued are sent.
func (o *Orders) Close() {
	close(o.queue)
	o.wg.Wait()
}

// Handler serves POST /orders.
func (o *Orders) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("POST /orders", o.place)
	return o.tel.Handler(mux)
}

// Placed is the answer to a placed order.
type Placed struct {
	Order      int64  `json:"order"`
	TotalCents int64  `json:"total_cents"`
	Receipt    string `json:"receipt"`
	Auth       string `json:"auth"`
}

func (o *Orders) place(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var ord Order
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&ord); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("order: %w", err))
		return
	}
	if err := ord.check(o.cfg.Products); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	// The customer, and their history for a loyalty discount.
	var name, email string
	var past int
	var spent sql.NullInt64
	err := o.db.QueryRowContext(ctx, `
		SELECT c.name, c.email, COUNT(o.id), SUM(o.total_cents)
		FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
		WHERE c.id = ? GROUP BY c.id`, ord.Customer).Scan(&name, &email, &past, &spent)
	if errors.Is(err, sql.ErrNoRows) {
		fail(w, http.StatusNotFound, fmt.Errorf("no customer %d", ord.Customer))
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	var total int64
	for _, it := range ord.Items {
		total += Price(it.Product) * int64(it.Qty)
	}
	if past >= 3 {
		total -= total / 20
	}

	// Reserve stock, charge, chain the receipt. With the coarse lock, the
	// charge happens inside the critical section.
	o.mu.Lock()
	o.reserve(ord.Items)
	if !o.cfg.CoarseLock {
		o.mu.Unlock()
	}
	auth, err := o.charge(ctx, ord.Customer, total)
	if !o.cfg.CoarseLock {
		o.mu.Lock()
	}
	if err != nil {
		o.release(ord.Items)
		o.mu.Unlock()
		fail(w, http.StatusBadGateway, err)
		return
	}
	line, _ := json.Marshal(struct {
		Order
		Total int64
		Auth  string
	}{ord, total, auth})
	h := sha256.New()
	h.Write(o.chain[:])
	h.Write(line)
	h.Sum(o.chain[:0])
	receipt := hex.EncodeToString(o.chain[:])
	o.mu.Unlock()

	id, err := o.record(ctx, ord, total, receipt)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	o.publish(ctx, message{order: id, email: email, name: name, total: total, items: ord.Items})
	writeJSON(w, http.StatusCreated, Placed{Order: id, TotalCents: total, Receipt: receipt, Auth: auth})
}

// reserve takes the items from stock, restocking a product that runs out;
// o.mu is held.
func (o *Orders) reserve(items []OrderItem) {
	for _, it := range items {
		s, ok := o.stock[it.Product]
		if !ok {
			s = InitialStock(it.Product)
		}
		if s < it.Qty {
			s += 1000
		}
		o.stock[it.Product] = s - it.Qty
	}
}

// release puts the items back; o.mu is held.
func (o *Orders) release(items []OrderItem) {
	for _, it := range items {
		o.stock[it.Product] += it.Qty
	}
}

// charge asks the payment service to charge the customer.
func (o *Orders) charge(ctx context.Context, customer int, cents int64) (string, error) {
	body, _ := json.Marshal(Charge{Customer: customer, Cents: cents})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.PaymentsURL+"/charge", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("charge: %w", err)
	}
	defer resp.Body.Close()
	var c Charged
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("charge: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return "", fmt.Errorf("charge: answer: %w", err)
	}
	return c.Auth, nil
}

// record stores the order and its items in one transaction.
func (o *Orders) record(ctx context.Context, ord Order, total int64, receipt string) (int64, error) {
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, "INSERT INTO orders (customer_id, total_cents, receipt) VALUES (?, ?, ?)", ord.Customer, total, receipt)
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	for _, it := range ord.Items {
		if _, err := tx.ExecContext(ctx, "INSERT INTO order_items VALUES (?, ?, ?, ?)", id, it.Product, it.Qty, Price(it.Product)); err != nil {
			return 0, err
		}
	}
	return id, tx.Commit()
}

// publish queues a confirmation, inside a PRODUCER span whose context
// travels with the message.
func (o *Orders) publish(ctx context.Context, m message) {
	ctx, span := o.tel.Tracer.Start(ctx, "order-confirmations publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "channel"),
			attribute.String("messaging.destination.name", "order-confirmations"),
			attribute.String("messaging.operation.type", "send")))
	defer span.End()
	m.carrier = propagation.MapCarrier{}
	o.tel.Propagator.Inject(ctx, m.carrier)
	o.queue <- m
}

// consume sends confirmations until the queue is closed and empty.
func (o *Orders) consume() {
	defer o.wg.Done()
	for m := range o.queue {
		o.confirm(m)
	}
}

var confirmation = template.Must(template.New("mail").Funcs(template.FuncMap{
	"price": func(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) },
}).Parse(`<html><body><p>Dear {{.Name}},</p>
<p>thank you for your order {{.Order}}. You bought:</p>
<table>{{range .Items}}<tr><td>{{.Qty}} x</td><td>product {{.Product}}</td><td>{{price (.Price)}} EUR</td></tr>
{{end}}</table><p>Total: {{price .Total}} EUR</p></body></html>
`))

var signingKey = []byte("testbed-signing-key")

// confirm renders and signs the confirmation e-mail of one order and
// records that it was sent, inside a CONSUMER span that continues the
// order's trace.
func (o *Orders) confirm(m message) {
	ctx := o.tel.Propagator.Extract(context.Background(), m.carrier)
	ctx, span := o.tel.Tracer.Start(ctx, "order-confirmations process", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "channel"),
			attribute.String("messaging.destination.name", "order-confirmations"),
			attribute.String("messaging.operation.type", "process")))
	defer span.End()
	var meter cputime.Meter
	if o.tel.SpanCPU() {
		meter = cputime.Start()
	}
	type line struct {
		OrderItem
		Price int64
	}
	lines := make([]line, len(m.items))
	for i, it := range m.items {
		lines[i] = line{it, Price(it.Product) * int64(it.Qty)}
	}
	var mail bytes.Buffer
	err := confirmation.Execute(&mail, struct {
		Name  string
		Order int64
		Items []line
		Total int64
	}{m.name, m.order, lines, m.total})
	if err == nil {
		// Sign the message as a mail server would (an HMAC over the body,
		// canonicalized line by line).
		mac := hmac.New(sha256.New, signingKey)
		for l := range strings.Lines(mail.String()) {
			mac.Write([]byte(strings.TrimRight(l, " \r\n")))
			mac.Write([]byte("\r\n"))
		}
		sig := hex.EncodeToString(mac.Sum(nil))
		_, err = o.db.ExecContext(ctx, "INSERT INTO notifications (order_id, signature, bytes) VALUES (?, ?, ?)", m.order, sig, mail.Len())
	}
	if err != nil {
		span.RecordError(err)
		slog.Error("send confirmation", "order", m.order, "err", err)
	}
	if d, ok := meter.Stop(); ok {
		cputime.Record(span, d)
	}
}

// Charge is a payment request.
type Charge struct {
	Customer int   `json:"customer"`
	Cents    int64 `json:"cents"`
}

// Charged is a payment's authorization.
type Charged struct {
	Auth string `json:"auth"`
}

// Payments is the slow payment provider: it waits Delay before it answers.
type Payments struct {
	Delay time.Duration
	tel   *Telemetry
}

// NewPayments returns the payment service.
func NewPayments(delay time.Duration, tel *Telemetry) *Payments {
	return &Payments{Delay: delay, tel: tel}
}

// Handler serves POST /charge.
func (p *Payments) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("POST /charge", p.charge)
	return p.tel.Handler(mux)
}

func (p *Payments) charge(w http.ResponseWriter, r *http.Request) {
	var c Charge
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&c); err != nil || c.Customer <= 0 || c.Cents < 0 {
		fail(w, http.StatusBadRequest, errors.New("charge: want {customer > 0, cents ≥ 0}"))
		return
	}
	select {
	case <-time.After(p.Delay):
	case <-r.Context().Done():
		return
	}
	mac := hmac.New(sha256.New, signingKey)
	fmt.Fprintf(mac, "%d:%d", c.Customer, c.Cents)
	writeJSON(w, http.StatusOK, Charged{Auth: hex.EncodeToString(mac.Sum(nil))[:16]})
}
