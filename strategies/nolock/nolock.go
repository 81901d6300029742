// Package nolock is the control strategy: it grants every request at once and
// excludes nobody. Under duplicate deliveries it must always show up as unsafe;
// if the checker cannot catch it, nothing else lockbench reports means anything.
package nolock

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

func init() {
	strategies.Register(strategies.Info{
		Name:        "nolock",
		Order:       10,
		Color:       "#000000", // black: the control
		Description: "control: no lock at all; must always be caught as unsafe under duplicates",
		Control:     true,
		// Nothing reads a call's context once the call has returned.
		KeepsNoContext: true,
		New: func(context.Context, strategies.Config) (strategies.Strategy, error) {
			return NoLock{}, nil
		},
	})
}

// NoLock grants every Acquire immediately.
type NoLock struct{}

var _ strategies.Strategy = NoLock{}

// Acquire returns a lease at once, unless ctx is already done.
func (NoLock) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return lease(key), nil
}

// Close does nothing.
func (NoLock) Close() error { return nil }

type lease string

func (l lease) Key() string                 { return string(l) }
func (lease) Token() int64                  { return 0 }
func (lease) Deadline() time.Time           { return time.Time{} }
func (lease) Release(context.Context) error { return nil }
