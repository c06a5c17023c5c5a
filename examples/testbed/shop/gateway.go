package shop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// GatewayConfig wires the gateway to the other services.
type GatewayConfig struct {
	CatalogURL, OrdersURL string
	// PoolSize is the number of workers that fetch recommended products
	// for all requests together (default 8).
	PoolSize int
	// FanOut is the number of products one recommendation page shows
	// (default 6).
	FanOut int
	// Products is the number of products in the catalog (default
	// DefaultSize.Products).
	Products int
}

// Gateway is the public API.
type Gateway struct {
	cfg    GatewayConfig
	tel    *Telemetry
	client *http.Client
	pool   *Pool
}

// NewGateway returns the gateway; Close stops its worker pool.
func NewGateway(cfg GatewayConfig, tel *Telemetry) *Gateway {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 8
	}
	if cfg.FanOut <= 0 {
		cfg.FanOut = 6
	}
	if cfg.Products <= 0 {
		cfg.Products = DefaultSize.Products
	}
	return &Gateway{cfg: cfg, tel: tel, client: tel.Client(), pool: NewPool(cfg.PoolSize)}
}

// Close stops the worker pool.
func (g *Gateway) Close() { g.pool.Close() }

// Handler serves
//
//	GET /catalog/{category}   an HTML page of the category's best products
//	GET /recommend/{user}     an HTML page of products picked for the user,
//	                          fetched in parallel through the worker pool
//	POST /orders              places an order (JSON in, JSON out)
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /catalog/{category}", g.catalog)
	mux.HandleFunc("GET /recommend/{user}", g.recommend)
	mux.HandleFunc("POST /orders", g.order)
	return g.tel.Handler(mux)
}

var pages = template.Must(template.New("catalog").Funcs(template.FuncMap{
	"price": func(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) },
	"stars": func(r float64) string { return fmt.Sprintf("%.1f", r) },
}).Parse(`<!doctype html>
<html><head><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1>
<ul class="products">{{range .Products}}
<li id="p{{.ID}}"><h2><a href="/product/{{.ID}}">{{.Name}}</a></h2>
<p class="price">{{price .PriceCents}} EUR{{if lt .Stock 10}} <em>only {{.Stock}} left</em>{{end}}</p>
<p class="rating">{{stars .Rating}} / 5 ({{.Reviews}} reviews)</p>
<p>{{.Description}}</p>{{range .Recent}}
<blockquote>{{.Rating}}/5 {{.Body}} <cite>{{.Author}}</cite></blockquote>{{end}}
</li>{{end}}
</ul></body></html>
`))

type page struct {
	Title    string
	Products []Product
}

// render writes the page as HTML.
func render(w http.ResponseWriter, p page) {
	var buf bytes.Buffer
	if err := pages.Execute(&buf, p); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// get fetches url and returns the body of a 200 response.
func (g *Gateway) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

func (g *Gateway) catalog(w http.ResponseWriter, r *http.Request) {
	cat, err := strconv.Atoi(r.PathValue("category"))
	if err != nil {
		fail(w, http.StatusBadRequest, errors.New("category must be an integer"))
		return
	}
	body, err := g.get(r.Context(), fmt.Sprintf("%s/products?category=%d", g.cfg.CatalogURL, cat))
	if err != nil {
		fail(w, http.StatusBadGateway, err)
		return
	}
	var ps []Product
	if err := json.Unmarshal(body, &ps); err != nil {
		fail(w, http.StatusBadGateway, fmt.Errorf("catalog answer: %w", err))
		return
	}
	render(w, page{Title: fmt.Sprintf("Category %d", cat), Products: ps})
}

// Recommended returns the products recommended to a user: n distinct
// product ids derived from the user's name.
func Recommended(user string, n, products int) []int {
	h := fnv.New64a()
	h.Write([]byte(user))
	x := h.Sum64()
	seen := map[int]bool{}
	var ids []int
	for len(ids) < min(n, products) {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		id := 1 + int(x%uint64(products))
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

func (g *Gateway) recommend(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	ids := Recommended(user, g.cfg.FanOut, g.cfg.Products)
	bodies := make([][]byte, len(ids))
	errs := make([]error, len(ids))
	var mu sync.Mutex
	tasks := make([]func(), len(ids))
	for i, id := range ids {
		tasks[i] = func() {
			b, err := g.get(r.Context(), fmt.Sprintf("%s/products/%d", g.cfg.CatalogURL, id))
			mu.Lock()
			bodies[i], errs[i] = b, err
			mu.Unlock()
		}
	}
	if err := g.pool.Run(r.Context(), tasks); err != nil {
		fail(w, http.StatusServiceUnavailable, err)
		return
	}
	// Decoding happens here, on the request's goroutine, so that its CPU
	// time is counted in the request's span.
	ps := make([]Product, len(ids))
	for i := range ids {
		if errs[i] != nil {
			fail(w, http.StatusBadGateway, errs[i])
			return
		}
		if err := json.Unmarshal(bodies[i], &ps[i]); err != nil {
			fail(w, http.StatusBadGateway, fmt.Errorf("catalog answer: %w", err))
			return
		}
	}
	render(w, page{Title: "Picked for " + user, Products: ps})
}

// Order is what a customer sends to place an order.
type Order struct {
	Customer int         `json:"customer"`
	Items    []OrderItem `json:"items"`
}

// OrderItem is one line of an order.
type OrderItem struct {
	Product int `json:"product"`
	Qty     int `json:"qty"`
}

func (g *Gateway) order(w http.ResponseWriter, r *http.Request) {
	var o Order
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&o); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("order: %w", err))
		return
	}
	if err := o.check(g.cfg.Products); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	body, _ := json.Marshal(o)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, g.cfg.OrdersURL+"/orders", bytes.NewReader(body))
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		fail(w, http.StatusBadGateway, err)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// check validates an order's shape.
func (o *Order) check(products int) error {
	if o.Customer <= 0 {
		return errors.New("order: customer must be a positive id")
	}
	if len(o.Items) == 0 || len(o.Items) > 50 {
		return errors.New("order: between 1 and 50 items")
	}
	for _, it := range o.Items {
		if it.Product <= 0 || it.Product > products || it.Qty <= 0 || it.Qty > 100 {
			return fmt.Errorf("order: bad item %+v", it)
		}
	}
	return nil
}
