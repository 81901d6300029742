package conformance

import "testing"

// T is what a case needs of its test: *testing.T's methods (Testing wraps
// one), with subtests of T. A command that runs the cases outside `go
// test` implements it too (lockbench adapter-check). Fatal, FailNow and
// Skip end the calling goroutine (runtime.Goexit), as testing's do.
type T interface {
	Helper()
	Name() string
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
	Cleanup(f func())
	// Run runs f as a subtest called name and reports whether it passed.
	Run(name string, f func(t T)) bool
}

// Testing is a *testing.T as a T.
func Testing(t *testing.T) T { return testingT{t} }

type testingT struct{ *testing.T }

func (w testingT) Run(name string, f func(t T)) bool {
	return w.T.Run(name, func(t *testing.T) { f(testingT{t}) })
}
