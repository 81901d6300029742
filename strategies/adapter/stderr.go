package adapter

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// tailBuffer keeps the last n bytes written to it: what an adapter said on
// its standard error just before it went, for the error that says so.
type tailBuffer struct {
	mu sync.Mutex
	n  int
	b  []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.n {
		t.b = t.b[:copy(t.b, t.b[len(t.b)-t.n:])]
	}
	return len(p), nil
}

// Bytes is a copy of the last n bytes written.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.b[max(0, len(t.b)-t.n):])
}

// tailLines is how many of standard error's last lines an error quotes.
const tailLines = 3

// noise are lines of a crash report that say where, not what: JavaScript
// stack frames, the caret under a source line, Node's version banner.
var noise = regexp.MustCompile(`^(\s+at\s|\s*\^+\s*$|Node\.js v\d)`)

// stderrTail quotes the last lines of an adapter's standard error,
// redacted, for an error message: "; its standard error ends: A | B", or
// "" when it said nothing.
func stderrTail(b []byte) string {
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" || noise.MatchString(l) {
			continue
		}
		keep = append(keep, string(truncate([]byte(strings.TrimSpace(l)), 200)))
	}
	if len(keep) == 0 {
		return ""
	}
	keep = keep[max(0, len(keep)-tailLines):]
	return "; its standard error ends: " + redact(strings.Join(keep, " | "))
}
