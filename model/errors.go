package model

import (
	"fmt"
	"strings"
)

// Error is a problem at one place of a model file. It prints on one line as
// `FILE:LINE:COL: PATH: MESSAGE`, leaving out what is unknown.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Pos.Line)
		if e.Pos.Col > 0 {
			fmt.Fprintf(&b, "%d:", e.Pos.Col)
		}
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Pos.Path != "" {
		b.WriteString(e.Pos.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a model, in file order. Its Error method
// puts one problem per line.
type Errors []*Error

// Error implements error.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// maxErrors bounds how many problems one load reports, so that a file of
// garbage gives a readable answer.
const maxErrors = 20

// errorSink collects the problems of one file.
type errorSink struct {
	file string
	errs Errors
}

func (s *errorSink) add(pos Pos, format string, args ...any) {
	if len(s.errs) >= maxErrors {
		return
	}
	s.errs = append(s.errs, &Error{File: s.file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (s *errorSink) err() error {
	if len(s.errs) == 0 {
		return nil
	}
	return s.errs
}
