package shop

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// Size is how much data the databases are seeded with.
type Size struct {
	Products, Reviews, Customers, PastOrders int
}

// DefaultSize is a shop of realistic size for the testbed.
var DefaultSize = Size{Products: 20000, Reviews: 100000, Customers: 10000, PastOrders: 20000}

// Categories is the number of product categories.
const Categories = 50

// OpenDB opens (creating it if need be) the SQLite database at path, in
// write-ahead-log mode, waiting up to 5 s for a lock.
func OpenDB(path string, conns int) (*sql.DB, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("shop: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(max(conns, 1))
	db.SetMaxIdleConns(max(conns, 1))
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("shop: open %s: %w", path, err)
	}
	return db, nil
}

var words = strings.Fields(`amber brisk cedar dune ember frost garnet harbor ivory juniper kestrel lumen
meadow nimbus onyx pebble quartz russet sable tundra umber velvet willow xenon yarrow zephyr
lamp chair kettle blanket lantern mug satchel scarf teapot vase basket candle clock desk
easel fork globe hammock jar kite ladle mirror notebook oven pillow quilt rug shelf towel`)

// text is n pseudo-random words.
func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// Price is a product's price in cents: every service that needs it derives
// it from the product id alone, as if from a shared price list.
func Price(product int) int64 {
	rng := rand.New(rand.NewPCG(uint64(product), 0x7072696365))
	return 199 + rng.Int64N(20000)
}

// InitialStock is a product's stock when the shop opens.
func InitialStock(product int) int {
	return 50 + product%200
}

// exec runs statements in order.
func exec(ctx context.Context, db *sql.DB, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%.40s...: %w", s, err)
		}
	}
	return nil
}

// seeded reports whether table exists and holds rows.
func seeded(ctx context.Context, db *sql.DB, table string) bool {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
	return err == nil && n > 0
}

// bulk inserts n rows in one transaction with one prepared statement.
func bulk(ctx context.Context, db *sql.DB, insert string, n int, row func(i int) []any) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range n {
		if _, err := st.ExecContext(ctx, row(i)...); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return tx.Commit()
}

// SeedCatalog creates the catalog's tables and fills them with generated
// products and reviews, unless they already hold data. The data depend on
// size alone.
func SeedCatalog(ctx context.Context, db *sql.DB, size Size) error {
	if seeded(ctx, db, "products") {
		return nil
	}
	err := exec(ctx, db,
		`CREATE TABLE IF NOT EXISTS products (id INTEGER PRIMARY KEY, category INTEGER NOT NULL, name TEXT NOT NULL,
			description TEXT NOT NULL, price_cents INTEGER NOT NULL, stock INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS reviews (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL, rating INTEGER NOT NULL,
			author TEXT NOT NULL, body TEXT NOT NULL)`)
	if err != nil {
		return fmt.Errorf("shop: seed catalog: %w", err)
	}
	rng := rand.New(rand.NewPCG(1, 0x636174616c6f67))
	err = bulk(ctx, db, "INSERT INTO products VALUES (?, ?, ?, ?, ?, ?)", size.Products, func(i int) []any {
		id := i + 1
		return []any{id, id % Categories, text(rng, 2) + fmt.Sprintf(" %d", id), text(rng, 30), Price(id), InitialStock(id)}
	})
	if err != nil {
		return fmt.Errorf("shop: seed products: %w", err)
	}
	err = bulk(ctx, db, "INSERT INTO reviews VALUES (?, ?, ?, ?, ?)", size.Reviews, func(i int) []any {
		return []any{i + 1, 1 + rng.IntN(size.Products), 1 + rng.IntN(5), text(rng, 1), text(rng, 15)}
	})
	if err != nil {
		return fmt.Errorf("shop: seed reviews: %w", err)
	}
	err = exec(ctx, db,
		"CREATE INDEX IF NOT EXISTS products_category ON products(category)",
		"CREATE INDEX IF NOT EXISTS reviews_product ON reviews(product_id)",
		"ANALYZE")
	if err != nil {
		return fmt.Errorf("shop: seed catalog: %w", err)
	}
	return nil
}

// SeedOrders creates the orders service's tables (customers, orders, their
// items, notifications sent) and fills them with generated customers and
// past orders, unless they already hold data.
func SeedOrders(ctx context.Context, db *sql.DB, size Size) error {
	if seeded(ctx, db, "customers") {
		return nil
	}
	err := exec(ctx, db,
		`CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, city TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, total_cents INTEGER NOT NULL,
			receipt TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS order_items (order_id INTEGER NOT NULL, product_id INTEGER NOT NULL, qty INTEGER NOT NULL,
			price_cents INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS notifications (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, signature TEXT NOT NULL,
			bytes INTEGER NOT NULL)`)
	if err != nil {
		return fmt.Errorf("shop: seed orders: %w", err)
	}
	rng := rand.New(rand.NewPCG(2, 0x6f7264657273))
	err = bulk(ctx, db, "INSERT INTO customers VALUES (?, ?, ?, ?)", size.Customers, func(i int) []any {
		name := text(rng, 2)
		return []any{i + 1, name, strings.ReplaceAll(name, " ", ".") + fmt.Sprintf("%d@example.com", i+1), text(rng, 1)}
	})
	if err != nil {
		return fmt.Errorf("shop: seed customers: %w", err)
	}
	err = bulk(ctx, db, "INSERT INTO orders VALUES (?, ?, ?, ?)", size.PastOrders, func(i int) []any {
		return []any{i + 1, 1 + rng.IntN(size.Customers), 0, "seed"}
	})
	if err != nil {
		return fmt.Errorf("shop: seed orders: %w", err)
	}
	err = bulk(ctx, db, "INSERT INTO order_items VALUES (?, ?, ?, ?)", 2*size.PastOrders, func(i int) []any {
		p := 1 + rng.IntN(size.Products)
		return []any{1 + i/2, p, 1 + rng.IntN(3), Price(p)}
	})
	if err != nil {
		return fmt.Errorf("shop: seed order items: %w", err)
	}
	err = exec(ctx, db,
		"CREATE INDEX IF NOT EXISTS order_items_order ON order_items(order_id)",
		"UPDATE orders SET total_cents = (SELECT SUM(qty * price_cents) FROM order_items WHERE order_id = orders.id)",
		"CREATE INDEX IF NOT EXISTS orders_customer ON orders(customer_id)",
		"ANALYZE")
	if err != nil {
		return fmt.Errorf("shop: seed orders: %w", err)
	}
	return nil
}
