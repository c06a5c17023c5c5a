package extract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

// TestFailuresWarned marks a twentieth of one operation's executions
// failed: the report names it and its share; with none failed it says
// nothing.
func TestFailuresWarned(t *testing.T) {
	spans := generate(41, 2000, true)
	_, rep := fold(t, spans).Model("shop", nil)
	if w := strings.Join(rep.Warnings, "\n"); strings.Contains(w, "failed") {
		t.Errorf("warned of failures where none failed: %s", w)
	}
	pages, failed := 0, 0
	for _, s := range spans {
		if s.Kind == ingest.KindServer && s.Name == "GET /page" {
			if pages%20 == 0 {
				s.Status = ingest.StatusError
				failed++
			}
			pages++
		}
	}
	st := fold(t, spans)
	loaded := roundTrip(t, st)
	_, rep = loaded.Model("shop", nil)
	want := fmt.Sprintf("(front/GET /page %.3g %% of each one's failed)", 100*float64(failed)/float64(pages))
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, want) {
		t.Errorf("no warning %q: %s", want, w)
	}
}
