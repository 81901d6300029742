package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/queue"
)

// The queue strategy offers what the load generator's broker path finds by
// type assertion.
var (
	_ broker     = (*queue.Queue)(nil)
	_ resetter   = (*queue.Queue)(nil)
	_ drainer    = (*queue.Queue)(nil)
	_ carrier    = (*queue.Lease)(nil)
	_ redelivery = (*queue.Lease)(nil)
)

// A run of the queue strategy against a real NATS server, in goroutine and
// process instances: every payment processed once, every delivery one
// cycle (the duplicates dropped by the broker at the publish), and a second run
// on the same server is not fooled by the first's duplicate window.
func TestQueueRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real NATS server; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := servers.Start(ctx, servers.Needs{NATS: true}, servers.Options{})
	if err != nil {
		t.Fatalf("start NATS: %v", err)
	}
	defer c.Stop()
	for _, mode := range []InstanceMode{InstanceGoroutine, InstanceProcess, InstanceGoroutine} {
		o, _ := quick("queue", func(s *Scenario) { s.InstanceMode = mode; s.Payments = 300 })
		o.Lock = strategies.Config{NATSURL: c.Endpoints().NATSURL}
		r, err := Run(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		s := r.Summary
		if s.Unsafe || s.Processed != 300 {
			t.Errorf("%s: unsafe %v, processed %d; want safe, 300", mode, s.Unsafe, s.Processed)
		}
		if got := s.Latency["total"].Count; got != 600 {
			t.Errorf("%s: %d cycles; want 600, one per delivery", mode, got)
		}
		if got := s.Latency["critical"].Count; got != 300 {
			t.Errorf("%s: %d critical sections; want 300, one per payment (the duplicates dropped at the publish)", mode, got)
		}
	}
}
