package strategies

import (
	"context"
	"errors"
	"testing"
)

// stub is a pointer-typed strategy, as most strategy packages' New return.
type stub struct{}

func (*stub) Acquire(context.Context, string) (Lease, error) { return nil, ErrNotAcquired }
func (*stub) Close() error                                   { return nil }

// TestFactoryOf checks that a constructor's error comes back with a nil
// Strategy, not a nil *stub in a non-nil interface, and its strategy as is.
func TestFactoryOf(t *testing.T) {
	boom := errors.New("boom")
	failing := FactoryOf(func(context.Context, Config) (*stub, error) { return nil, boom })
	s, err := failing(context.Background(), Config{})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v; want %v", err, boom)
	}
	if s != nil {
		t.Errorf("Strategy = %#v on error; want a nil interface", s)
	}

	want := &stub{}
	ok := FactoryOf(func(context.Context, Config) (*stub, error) { return want, nil })
	s, err = ok(context.Background(), Config{})
	if err != nil || s != Strategy(want) {
		t.Errorf("got (%v, %v); want (%v, nil)", s, err, want)
	}
}
