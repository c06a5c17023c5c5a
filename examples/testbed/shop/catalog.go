package shop

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Product is a product as the catalog serves it.
type Product struct {
	ID          int      `json:"id"`
	Category    int      `json:"category"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	PriceCents  int64    `json:"price_cents"`
	Stock       int      `json:"stock"`
	Reviews     int      `json:"reviews"`
	Rating      float64  `json:"rating"`
	Recent      []Review `json:"recent,omitempty"`
}

// Review is one customer review.
type Review struct {
	Rating int    `json:"rating"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

// Catalog serves products and reviews from its database.
type Catalog struct {
	db  *sql.DB
	tel *Telemetry
}

// NewCatalog returns the catalog service over a seeded database.
func NewCatalog(db *sql.DB, tel *Telemetry) *Catalog {
	return &Catalog{db: db, tel: tel}
}

// Handler serves
//
//	GET /products?category=N   the category's 40 best-rated products, with
//	                           review counts and mean ratings (a join and an
//	                           aggregate over its reviews)
//	GET /products/{id}         one product with its reviews
func (c *Catalog) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /products", c.list)
	mux.HandleFunc("GET /products/{id}", c.product)
	return c.tel.Handler(mux)
}

func healthz(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// fail answers with an error status and a one-line message.
func fail(w http.ResponseWriter, status int, err error) {
	http.Error(w, err.Error(), status)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (c *Catalog) list(w http.ResponseWriter, r *http.Request) {
	cat, err := strconv.Atoi(r.URL.Query().Get("category"))
	if err != nil || cat < 0 || cat >= Categories {
		fail(w, http.StatusBadRequest, fmt.Errorf("category must be an integer in [0, %d)", Categories))
		return
	}
	rows, err := c.db.QueryContext(r.Context(), `
		SELECT p.id, p.category, p.name, p.description, p.price_cents, p.stock,
		       COUNT(r.id), COALESCE(AVG(r.rating), 0) AS rating
		FROM products p LEFT JOIN reviews r ON r.product_id = p.id
		WHERE p.category = ?
		GROUP BY p.id
		ORDER BY rating DESC, p.id
		LIMIT 40`, cat)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	defer rows.Close()
	out := []Product{}
	for rows.Next() {
		var p Product
		if err := rows.Scan(&p.ID, &p.Category, &p.Name, &p.Description, &p.PriceCents, &p.Stock, &p.Reviews, &p.Rating); err != nil {
			fail(w, http.StatusInternalServerError, err)
			return
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Catalog) product(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		fail(w, http.StatusBadRequest, errors.New("product id must be an integer"))
		return
	}
	var p Product
	err = c.db.QueryRowContext(r.Context(),
		"SELECT id, category, name, description, price_cents, stock FROM products WHERE id = ?", id).
		Scan(&p.ID, &p.Category, &p.Name, &p.Description, &p.PriceCents, &p.Stock)
	if errors.Is(err, sql.ErrNoRows) {
		fail(w, http.StatusNotFound, fmt.Errorf("no product %d", id))
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	rows, err := c.db.QueryContext(r.Context(), "SELECT rating, author, body FROM reviews WHERE product_id = ? ORDER BY id DESC", id)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	defer rows.Close()
	sum := 0
	for rows.Next() {
		var rv Review
		if err := rows.Scan(&rv.Rating, &rv.Author, &rv.Body); err != nil {
			fail(w, http.StatusInternalServerError, err)
			return
		}
		p.Reviews++
		sum += rv.Rating
		p.Recent = append(p.Recent, rv)
	}
	if err := rows.Err(); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	if p.Reviews > 0 {
		p.Rating = float64(sum) / float64(p.Reviews)
	}
	writeJSON(w, http.StatusOK, p)
}
