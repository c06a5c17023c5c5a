package shop

import (
	"context"
	"crypto/sha256"
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

// BenchmarkHashControl hashes 64 KiB with SHA-256 from as many goroutines as
// GOMAXPROCS: work that shares nothing, so with -cpu 1,2 it tells how the
// machine itself scales with cores (a virtual machine's CPUs can be
// hyperthreads of one core, or share it with other guests), the control for
// BenchmarkCatalogList.
func BenchmarkHashControl(b *testing.B) {
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i)
	}
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sum := sha256.Sum256(buf)
			if sum[0] == 0 && sum[1] == 0 && sum[2] == 0 && sum[3] == 0 {
				b.Log("unlikely sum") // keeps the hash from being optimized away
			}
		}
	})
}
