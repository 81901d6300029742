package adapter

import (
	"bytes"
	"io"
	"sync"
)

// redactor writes an adapter's standard error to a file line by line, each
// line through servers.Redact, as all of lockbench's output is.
type redactor struct {
	mu  sync.Mutex
	w   io.WriteCloser
	buf []byte
}

func newRedactor(w io.WriteCloser) *redactor { return &redactor{w: w} }

func (r *redactor) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			break
		}
		r.emit(r.buf[:i])
		r.buf = r.buf[i+1:]
	}
	// A line with no end in sight is written in pieces, each redacted.
	if len(r.buf) > maxLine {
		r.emit(r.buf)
		r.buf = nil
	}
	return len(p), nil
}

func (r *redactor) emit(line []byte) {
	_, _ = io.WriteString(r.w, redact(string(line))+"\n")
}

// Close writes what is left of the last line and closes the file.
func (r *redactor) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		r.emit(r.buf)
		r.buf = nil
	}
	return r.w.Close()
}
