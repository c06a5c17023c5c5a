package extract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, err string
		outside         string
	}{
		{"empty", "", "", ""},
		{"inline", "outside_spans: inline\n", "", OutsideInline},
		{"background", "outside_spans: background\nno_speed_curves: true\n", "", OutsideBackground},
		{"unknown value", "outside_spans: later\n", `bad.yaml: outside_spans: "later" is neither inline nor background`, ""},
		{"unknown key", "outside: inline\n", "field outside not found", ""},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
		if c.err != "" {
			path = filepath.Join(dir, "bad.yaml")
		}
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && cfg.OutsideSpans != c.outside:
			t.Errorf("%s: outside_spans %q, want %q", c.name, cfg.OutsideSpans, c.outside)
		}
	}
	if !(*Config)(nil).background() || (&Config{OutsideSpans: OutsideInline}).background() {
		t.Error("the CPU outside spans should be background by default and inline when asked")
	}
}
