package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.yaml")
	if err := Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "first")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}

	// A write that fails leaves the file as it was, and no temporary file.
	boom := errors.New("boom")
	err = Write(path, func(w io.Writer) error {
		io.WriteString(w, "half of the second")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want boom naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if n := entries(t, dir); len(n) != 1 {
		t.Errorf("directory holds %v", n)
	}
}

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, strings.Repeat("x", 1<<17)) // more than the buffer
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the destination exists before Commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after Commit: nothing
	if b, _ := os.ReadFile(path); len(b) != 1<<17 {
		t.Errorf("file holds %d bytes", len(b))
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}

	g, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(g, "abandoned")
	g.Abort()
	if b, _ := os.ReadFile(path); len(b) != 1<<17 {
		t.Errorf("Abort changed the file: %d bytes", len(b))
	}
	if n := entries(t, dir); len(n) != 1 {
		t.Errorf("directory holds %v", n)
	}
}

func TestCreateNamesTheDestination(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "out.html")
	_, err := Create(path)
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), ".out.html.") {
		t.Errorf("error %v: want one naming %s and not the temporary file", err, path)
	}
}

func TestCreateOverADirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("error %v, want one that says it is a directory", err)
	}
	if n := entries(t, dir); len(n) != 0 {
		t.Errorf("directory holds %v", n)
	}
}
