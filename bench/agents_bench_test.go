package bench

import (
	"context"
	"net"
	"testing"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/agent"
)

// benchAgentToken is the token of the benchmark's agents.
const benchAgentToken = "bench-agent-token"

// startBenchAgents serves n agents in this process on loopback (their
// instance processes are this binary again) and opens a pool on them.
func startBenchAgents(b *testing.B, n int) *agent.Pool {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var addrs []agent.Target
	var done []chan struct{}
	for range n {
		a, err := agent.New(agent.Config{Token: benchAgentToken})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addrs = append(addrs, agent.Target{Addr: ln.Addr().String()})
		d := make(chan struct{})
		done = append(done, d)
		go func() { defer close(d); _ = a.Serve(ctx, ln) }()
	}
	pool, err := agent.Open(ctx, addrs, agent.PoolConfig{DialConfig: agent.DialConfig{Token: benchAgentToken}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = pool.Close()
		cancel()
		for _, d := range done {
			<-d
		}
	})
	return pool
}

// BenchmarkAgentTransport is BenchmarkProcessTransport's load (2
// instances × 8 workers, one delivery per payment, no hold, the memory
// store, closed loop) with the instance processes on two agents on this
// host, with each store transport (sync: two round trips a critical
// section; sequenced: on agents, the Enter one-way and applied on
// arrival, the Finish a round trip), beside the same load in goroutine
// mode and with local instance processes (sequenced): what the agents'
// hop (deliveries and reports relayed by the agent, the store over
// loopback TCP instead of a Unix socket) costs. payments/cpu-s counts the
// CPU of this process and its children, the agents' instances among them.
func BenchmarkAgentTransport(b *testing.B) {
	for _, name := range []string{"nolock", "setnx"} {
		lock, ok := transportLock(b, name)
		if !ok {
			continue
		}
		b.Run("strategy="+name+"/mode=goroutine", func(b *testing.B) {
			runTransport(b, name, "goroutine", "", lock, nil)
		})
		b.Run("strategy="+name+"/mode=process/transport="+loadgen.TransportSequenced, func(b *testing.B) {
			runTransport(b, name, "process", loadgen.TransportSequenced, lock, nil)
		})
		for _, transport := range []string{loadgen.TransportSync, loadgen.TransportSequenced} {
			b.Run("strategy="+name+"/mode=agents/transport="+transport, func(b *testing.B) {
				runTransport(b, name, "process", transport, lock, startBenchAgents(b, 2))
			})
		}
	}
}
