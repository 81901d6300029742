package cli

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/lockbench/lockbench/conformance"
)

// caseT runs one conformance case outside `go test` (lockbench
// adapter-check): a conformance.T that keeps whether the case failed or
// skipped, and its first message. Logs are dropped.
type caseT struct {
	name     string
	mu       sync.Mutex
	failed   bool
	skipped  bool
	message  string
	cleanups []func()
}

var _ conformance.T = (*caseT)(nil)

func (c *caseT) Helper()                   {}
func (c *caseT) Name() string              { return c.name }
func (c *caseT) Logf(string, ...any)       {}
func (c *caseT) Error(args ...any)         { c.fail(fmt.Sprint(args...)) }
func (c *caseT) Errorf(f string, a ...any) { c.fail(fmt.Sprintf(f, a...)) }
func (c *caseT) Fatal(args ...any)         { c.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (c *caseT) Fatalf(f string, a ...any) { c.fail(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (c *caseT) Skip(args ...any)          { c.skip(fmt.Sprint(args...)); runtime.Goexit() }
func (c *caseT) Skipf(f string, a ...any)  { c.skip(fmt.Sprintf(f, a...)); runtime.Goexit() }

func (c *caseT) Cleanup(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, f)
}

func (c *caseT) fail(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.failed {
		c.message = oneLine(msg)
	}
	c.failed = true
}

func (c *caseT) skip(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.failed {
		c.skipped, c.message = true, oneLine(msg)
	}
}

// Run runs f as a subtest, at once and to its end; its failure fails c,
// with the subtest's name before its message.
func (c *caseT) Run(name string, f func(t conformance.T)) bool {
	sub := &caseT{name: c.name + "/" + name}
	sub.run(f)
	if sub.failed {
		c.fail(name + ": " + sub.message)
	}
	return !sub.failed
}

// run runs f on c, then c's cleanups, last first, each in a goroutine of
// its own, since Fatal and Skip end the goroutine they are called on.
func (c *caseT) run(f func(t conformance.T)) {
	c.goexit(func() { f(c) })
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.goexit(c.cleanups[i])
	}
}

// goexit runs f in a goroutine and waits for it to end, returned, ended by
// runtime.Goexit, or panicked (a failure).
func (c *caseT) goexit(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				c.fail(fmt.Sprint("panic: ", r))
			}
		}()
		f()
	}()
	<-done
}
