package extract_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolvesNothing checks that extraction solves no model itself: neither
// extract nor any package of ours it imports, directly or not, imports a
// solver (solve's subpackages) or what stands on them (whatif, validate,
// analyze, report). Where generating needs a simulation it asks the
// caller's Config.Simulator.
func TestSolvesNothing(t *testing.T) {
	const module = "github.com/perfcast/perfcast/"
	above := []string{"solve/", "whatif", "validate", "analyze", "report"}
	seen := map[string]bool{}
	var walk func(rel string)
	walk = func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		pkg, err := build.ImportDir(filepath.Join("..", filepath.FromSlash(rel)), 0)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, imp := range pkg.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			for _, a := range above {
				if dep == a || strings.HasPrefix(dep, a) && strings.HasSuffix(a, "/") {
					t.Errorf("%s imports %s", rel, imp)
				}
			}
			walk(dep)
		}
	}
	walk("extract")
	if !seen["model"] {
		t.Error("the walk did not reach model: it read no imports")
	}
}
