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

func TestComponentRules(t *testing.T) {
	cfg := &Config{
		Components: []ComponentRule{
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
	for _, c := range []struct {
		span *ingest.Span
		want string
	}{
		{sp("shop", "GET /admin/users/42"), "admin/GET /admin/users/{id}"},
		{sp("shop", "GET /page"), "storefront/GET /page"},
		{sp("other", "GET /admin/users"), "other/GET /admin/users"},
		{sp("shop", "GET /page", ingest.Attr{Key: "k8s.deployment.name", Value: "shop-canary"}), "canary/GET /page"},
		{sp("shop", "GET /page", ingest.Attr{Key: "k8s.deployment.name", Value: "shop"}), "storefront/GET /page"},
	} {
		if got := cfg.opID(c.span); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.span.Service, c.span.Name, got, c.want)
		}
	}
	if got := strings.Join(cfg.Attributes(), ","); got != "size,k8s.deployment.name,missing" {
		t.Errorf("attributes %s", got)
	}
}

func TestComponentRuleErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"components:\n  - {service: shop}\n", "cfg.yaml:2: components[0]: a rule needs the component it names"},
		{"components:\n  - {component: a, span: x}\n  - component: b\n", "cfg.yaml:3: components[1]: a rule needs a condition"},
		{"components:\n  - {component: a, servce: x}\n", `cfg.yaml:2: unknown key "servce"`},
		{"components:\n  - {component: a, service: [x]}\n", "cfg.yaml:2:"},
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
