package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Options configure a Reader. The zero value is usable.
type Options struct {
	// Attributes names extra span or resource attributes to keep in
	// Span.Extra, such as request parameters or session ids.
	Attributes []string
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
}

// FileStats describes what was read from one input.
type FileStats struct {
	Path   string `json:"path"`
	Format Format `json:"format"`
	Gzip   bool   `json:"gzip,omitempty"`
	Spans  int64  `json:"spans"`
	Bytes  int64  `json:"bytes"` // decompressed bytes consumed
	Damage Damage `json:"damage"`
	// Skipped says why a file found in a directory was passed over: it
	// holds no traces (another format, or a trace format with no span).
	// A file named on its own is never skipped: it is an error.
	Skipped string `json:"skipped,omitempty"`
}

// Stats sums up what a Reader has read so far.
type Stats struct {
	Files  []FileStats `json:"files"`
	Spans  int64       `json:"spans"`
	Damage Damage      `json:"damage"`
}

// Reader yields the spans of a list of inputs, one input after the other in
// the order given (directories expanded in lexical order). It is not safe for
// concurrent use.
type Reader struct {
	opts  Options
	paths []string
	inDir []bool // whether paths[i] was found in a directory
	next  int    // index of the next path to open

	cur    *input
	attrs  *attrSet
	queue  []*Span
	qpos   int
	slab   []Span
	files  []FileStats
	spans  int64
	damage Damage
}

// input is one open file being decoded.
type input struct {
	path   string
	inDir  bool
	closer io.Closer
	dec    decoder
	sink   *sink
	stats  *FileStats
}

// decoder decodes one unit of input (a line, a message, an element) into
// its sink per call, and returns io.EOF at the end of the input.
type decoder interface {
	decode() error
}

// Open prepares a Reader over files, directories (read recursively, hidden
// entries skipped) and "-" for standard input. It checks that every path
// exists; files are opened one at a time as reading proceeds.
func Open(paths []string, opts Options) (*Reader, error) {
	if len(paths) == 0 {
		return nil, errors.New("no trace input given")
	}
	var files []string
	var inDir []bool
	for _, p := range paths {
		if p == "-" {
			files, inDir = append(files, p), append(inDir, false)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files, inDir = append(files, p), append(inDir, false)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				files, inDir = append(files, path), append(inDir, true)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: directory holds no files", p)
		}
	}
	return &Reader{opts: opts, paths: files, inDir: inDir, attrs: newAttrSet(opts.Attributes)}, nil
}

// Paths returns the files the Reader reads, directories expanded.
func (r *Reader) Paths() []string { return r.paths }

// Next returns the next span, or io.EOF after the last one. A file named
// on its own that is not in a trace format or holds no span yields an
// error naming it; a later call goes on with the next input. Such a file
// found in a directory is skipped, and Stats says why. The returned span
// belongs to the caller.
// Spans are allocated in blocks of 256: keeping one span alive for long keeps
// its block alive, so long-lived summaries should copy what they need.
func (r *Reader) Next(ctx context.Context) (*Span, error) {
	for {
		if r.qpos < len(r.queue) {
			s := r.queue[r.qpos]
			r.queue[r.qpos] = nil
			r.qpos++
			return s, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.cur == nil {
			if r.next >= len(r.paths) {
				return nil, io.EOF
			}
			if err := r.openNext(); err != nil {
				return nil, err
			}
			if r.cur == nil {
				continue // skipped
			}
		}
		err := r.cur.dec.decode()
		// Double buffering: the decoder fills one slice while Next drains the other.
		r.queue, r.cur.sink.out = r.cur.sink.out, r.queue[:0]
		r.qpos = 0
		if err == io.EOF {
			if err := r.closeCur(); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			r.closeCur()
			return nil, err
		}
	}
}

// Stats returns what has been read so far; complete after Next returned io.EOF.
func (r *Reader) Stats() Stats {
	st := Stats{Files: append([]FileStats(nil), r.files...), Spans: r.spans}
	st.Damage.Merge(r.damage)
	if r.cur != nil {
		st.Files = append(st.Files, *r.cur.stats)
		st.Spans += r.cur.stats.Spans
		st.Damage.Merge(r.cur.stats.Damage)
	}
	return st
}

// Close releases the file being read, if any.
func (r *Reader) Close() error {
	if r.cur == nil {
		return nil
	}
	err := r.cur.closer.Close()
	r.cur = nil
	return err
}

// openNext opens the next path into r.cur, or leaves r.cur nil when it
// skips a file of a directory that holds no traces.
func (r *Reader) openNext() error {
	path, inDir := r.paths[r.next], r.inDir[r.next]
	r.next++
	var f io.ReadCloser
	if path == "-" {
		in := r.opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		f = io.NopCloser(in)
	} else {
		var err error
		if f, err = os.Open(path); err != nil {
			return err
		}
	}
	name := path
	if path == "-" {
		name = "<stdin>"
	}
	stats := &FileStats{Path: name}
	k := &sink{file: name, attrs: r.attrs, stats: stats, alloc: r.alloc}
	dec, err := detect(f, k)
	if err != nil {
		f.Close()
		if inDir && holdsNoTraces(err) {
			stats.Skipped = err.Error()
			r.files = append(r.files, *stats)
			return nil
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	r.cur = &input{path: name, closer: f, dec: dec, sink: k, stats: stats, inDir: inDir}
	return nil
}

func (r *Reader) closeCur() error {
	c := r.cur
	r.cur = nil
	c.closer.Close()
	c.stats.Bytes = c.sink.bytes()
	r.files = append(r.files, *c.stats)
	r.spans += c.stats.Spans
	r.damage.Merge(c.stats.Damage)
	if c.stats.Spans == 0 {
		var err error
		if d := c.stats.Damage; d.Total() > 0 {
			err = fmt.Errorf("no readable span (%s)", strings.TrimPrefix(damageSummary(d), c.path+": "))
		} else {
			err = fmt.Errorf("no spans found in %s input", c.stats.Format)
		}
		if c.inDir {
			r.files[len(r.files)-1].Skipped = err.Error()
			return nil
		}
		return fmt.Errorf("%s: %w", c.path, err)
	}
	return nil
}

// damageSummary renders the first damage message, or the counts.
func damageSummary(d Damage) string {
	for _, k := range d.Kinds() {
		if s := d.Samples[k]; len(s) > 0 {
			return s[0]
		}
	}
	var b strings.Builder
	for i, k := range d.Kinds() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, d.Counts[k])
	}
	return b.String()
}

// slabSize is how many spans are allocated at once.
const slabSize = 256

// alloc returns a fresh span from the current slab.
func (r *Reader) alloc() *Span {
	if len(r.slab) == 0 {
		r.slab = make([]Span, slabSize)
	}
	s := &r.slab[0]
	r.slab = r.slab[1:]
	s.CPUTime = math.NaN()
	return s
}

// sink receives the spans a decoder produces, checks them and counts damage.
type sink struct {
	file   string
	attrs  *attrSet
	stats  *FileStats
	alloc  func() *Span
	out    []*Span
	offset func() int64 // decompressed bytes consumed, for Bytes
}

func (k *sink) bytes() int64 {
	if k.offset == nil {
		return 0
	}
	return k.offset()
}

// newSpan returns an empty span to fill.
func (k *sink) newSpan() *Span { return k.alloc() }

// push checks a filled span and queues it, or counts it as damage. The span
// is not reused when rejected; its memory simply goes unused.
func (k *sink) push(s *Span, st *spanState) {
	switch {
	case s.TraceID.IsZero() || s.SpanID.IsZero():
		k.damagef(DamageMissingID, "%s: span %q: missing trace or span id", k.file, s.Name)
		return
	case s.Start <= 0 || s.End <= 0:
		k.damagef(DamageMissingTime, "%s: trace %s span %s: missing start or end time", k.file, s.TraceID, s.SpanID)
		return
	case s.End < s.Start:
		k.damagef(DamageNegativeDuration, "%s: trace %s span %s: ends %d ns before it starts", k.file, s.TraceID, s.SpanID, s.Start-s.End)
		return
	}
	if st != nil && st.badValue != "" {
		k.damagef(DamageBadValue, "%s: trace %s span %s: %s is not a non-negative number", k.file, s.TraceID, s.SpanID, st.badValue)
	}
	if st != nil && st.samplerType != "" && s.Sampling.Probability == 0 {
		s.Sampling = samplerSampling(st.samplerType, st.samplerParam, st.hasParam)
	}
	k.stats.Spans++
	k.out = append(k.out, s)
}

// damagef counts one damage occurrence with a formatted message.
func (k *sink) damagef(kind DamageKind, format string, args ...any) {
	k.stats.Damage.Addf(kind, format, args...)
}
