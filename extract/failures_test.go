package extract

import (
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
	pages := 0
	for _, s := range spans {
		if s.Kind == ingest.KindServer && s.Name == "GET /page" {
			if pages%20 == 0 {
				s.Status = ingest.StatusError
			}
			pages++
		}
	}
	st := fold(t, spans)
	loaded := roundTrip(t, st)
	_, rep = loaded.Model("shop", nil)
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "(front/GET /page 5 % of each one's failed)") {
		t.Errorf("no warning that 5 %% of GET /page failed: %s", w)
	}
}
