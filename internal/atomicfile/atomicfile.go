// Package atomicfile writes a file through a temporary file in the same
// directory, renamed over the destination once it is complete: a reader, or
// a crash, never sees half of it, and a write that fails or is abandoned
// leaves the file that was there before, or none.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is a file being written. Write to it, then Commit or Abort.
type File struct {
	path string
	tmp  *os.File
	buf  *bufio.Writer
	done bool
}

// Create starts writing the file at path. Its permissions will be 0644.
func Create(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("write %s: it is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	return &File{path: path, tmp: tmp, buf: bufio.NewWriterSize(tmp, 1<<16)}, nil
}

// Write writes to the file's buffer.
func (f *File) Write(p []byte) (int, error) { return f.buf.Write(p) }

// Commit flushes what was written, makes it durable and puts it in place
// of the destination. The file is abandoned when that fails.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("write %s: already committed or abandoned", f.path)
	}
	err := f.buf.Flush()
	if err == nil {
		err = f.tmp.Chmod(0o644)
	}
	if err == nil {
		err = f.tmp.Sync()
	}
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.path)
	}
	f.done = true
	if err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	return nil
}

// Abort abandons the file: the destination is left as it was. It does
// nothing after Commit, so that it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}

// Write writes the file at path with what write produces, through Create
// and Commit; when write fails the destination is left as it was.
func Write(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// unwrapPath drops the path of a *os.PathError or *os.LinkError, which
// names the temporary file rather than the one the user asked for.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
