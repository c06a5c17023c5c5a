package shop

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkCatalogList serves category listings from a catalog of the
// testbed's size, from as many goroutines as GOMAXPROCS: with -cpu 1,2 it
// tells how the catalog's queries scale with cores, which a run at
// GOMAXPROCS 1 (the experiment's reference) cannot show.
//
//	go test -run '^$' -bench CatalogList -cpu 1,2 ./examples/testbed/shop
func BenchmarkCatalogList(b *testing.B) {
	db, err := OpenDB(filepath.Join(b.TempDir(), "catalog.db"), 4)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := SeedCatalog(context.Background(), db, DefaultSize); err != nil {
		b.Fatal(err)
	}
	tel, err := NewTelemetry(TelemetryConfig{Service: "catalog"})
	if err != nil {
		b.Fatal(err)
	}
	h := NewCatalog(db, tel).Handler()
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/products?category="+strconv.Itoa(int(n.Add(1)%Categories)), nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Errorf("status %d", w.Code)
				return
			}
		}
	})
}
