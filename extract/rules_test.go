package extract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfcast/perfcast/ingest"
)

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, value string
		want           bool
	}{
		{"GET /admin/*", "GET /admin/users/{id}", true},
		{"GET /admin/*", "GET /page", false},
		{"*admin*", "POST /x/admin", true},
		{"cat?log", "catalog", true},
		{"cat?log", "catlog", false},
		{"a.b", "axb", false}, // dots are literal
		{"(x)+", "(x)+", true},
		{"shop", "shop-2", false}, // the whole value
	} {
		if got := glob(c.pattern).MatchString(c.value); got != c.want {
			t.Errorf("glob %q on %q: %v, want %v", c.pattern, c.value, got, c.want)
		}
	}
}

func TestRules(t *testing.T) {
	cfg := &Config{
		Components: []Rule{
			{Component: "admin", Service: "shop", Span: "GET /admin/*"},
			{Component: "canary", Attributes: map[string]string{"k8s.deployment.name": "*-canary"}},
			{Component: "never", Service: "shop", Attributes: map[string]string{"missing": ""}},
		},
		Rename:  map[string]string{"shop": "storefront"},
		Params:  []string{"size"},
		Session: "size", // once in Attributes
	}
	sp := func(service, name string, attrs ...ingest.Attr) *ingest.Span {
		return &ingest.Span{Service: service, Name: name, Kind: ingest.KindServer, Extra: attrs}
	}
	checkOpIDs(t, cfg, []opIDCase{
		{sp("shop", "GET /admin/users/42"), "admin/GET /admin/users/{id}"},
		{sp("shop", "GET /page"), "storefront/GET /page"},
		{sp("other", "GET /admin/users"), "other/GET /admin/users"},
		{sp("shop", "GET /page", ingest.Attr{Key: "k8s.deployment.name", Value: "shop-canary"}), "canary/GET /page"},
		{sp("shop", "GET /page", ingest.Attr{Key: "k8s.deployment.name", Value: "shop"}), "storefront/GET /page"},
	})
	if got := strings.Join(cfg.Attributes(), ","); got != "size,k8s.deployment.name,missing" {
		t.Errorf("attributes %s", got)
	}

	// Operation rules name the operation first; component rules then see
	// the name they gave.
	cfg = &Config{
		Operations: []Rule{
			{Name: "GET /p/{slug}", Span: "GET /p/*"},
			{Name: "query", Service: "db", Attributes: map[string]string{"db.operation": "SELECT"}},
		},
		Components: []Rule{{Component: "pages", Span: "GET /p/{slug}"}},
	}
	checkOpIDs(t, cfg, []opIDCase{
		{sp("shop", "GET /p/blue-shoes"), "pages/GET /p/{slug}"},
		{sp("shop", "GET /page"), "shop/GET /page"},
		{sp("db", "SELECT items", ingest.Attr{Key: "db.operation", Value: "SELECT"}), "db/query"},
		{sp("db", "UPDATE items", ingest.Attr{Key: "db.operation", Value: "UPDATE"}), "db/UPDATE items"},
	})
}

// opIDCase is a span and the operation id it should get.
type opIDCase struct {
	span *ingest.Span
	want string
}

func checkOpIDs(t *testing.T, cfg *Config, cases []opIDCase) {
	t.Helper()
	for _, c := range cases {
		if got := cfg.opID(c.span); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.span.Service, c.span.Name, got, c.want)
		}
	}
}

func TestRuleErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"components:\n  - {service: shop}\n", "cfg.yaml:2: components[0]: a rule needs the component it gives"},
		{"components:\n  - {component: a, span: x}\n  - component: b\n", "cfg.yaml:3: components[1]: a rule needs a condition"},
		{"components:\n  - {component: a, servce: x}\n", `cfg.yaml:2: unknown key "servce"`},
		{"components:\n  - {component: a, service: [x]}\n", "cfg.yaml:2:"},
		{"operations:\n  - {span: \"GET /p/*\"}\n", "cfg.yaml:2: operations[0]: a rule needs the operation name it gives"},
		{"operations:\n  - {name: x, component: y, span: z}\n", "cfg.yaml:2: operations[0]: component: a rule in operations gives the operation name only"},
		{"components:\n  - {name: x, component: y, span: z}\n", "cfg.yaml:2: components[0]: name: a rule in components gives the component only"},
	} {
		path := filepath.Join(dir, "cfg.yaml")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}

// TestRareOperations: span names that carry a value make an operation of
// each request, which a warning points out; an operation rule makes them
// one.
func TestRareOperations(t *testing.T) {
	var spans []*ingest.Span
	for i := range 400 {
		var tid ingest.TraceID
		tid[0], tid[15] = 7, byte(i)
		tid[14] = byte(i >> 8)
		var sid ingest.SpanID
		sid[6], sid[7] = byte(i>>8), byte(i)+1
		start := int64(1_700_000_000_000_000_000) + int64(i)*50e6
		spans = append(spans, &ingest.Span{TraceID: tid, SpanID: sid, Kind: ingest.KindServer, Service: "web", Host: "h",
			Name:  "GET /p/shoe-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)),
			Start: start, End: start + 2e6, CPUTime: 1e-3})
	}
	rare := func(rep *Report) bool {
		for _, w := range rep.Warnings {
			if strings.Contains(w, "operations were seen at most twice") {
				return true
			}
		}
		return false
	}
	m, rep := foldWith(t, spans, nil).Model("rare", nil)
	if len(m.Components[0].Operations) < 300 || !rare(rep) {
		t.Errorf("%d operations, warned %v", len(m.Components[0].Operations), rare(rep))
	}
	cfg := &Config{Operations: []Rule{{Name: "GET /p/{slug}", Span: "GET /p/*"}}}
	m, rep = foldWith(t, spans, cfg).Model("rare", cfg)
	if ops := m.Components[0].Operations; len(ops) != 1 || ops[0].Name != "GET /p/{slug}" || rare(rep) {
		t.Errorf("with the rule: %d operations, warned %v", len(ops), rare(rep))
	}
}
