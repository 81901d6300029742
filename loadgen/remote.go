// remoteInstance, the coordinator's side of an instance process: it
// starts the process, sends it deliveries, reads its reports and stops it.

package loadgen

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
)

// remoteInstance is the coordinator's side of an instance process.
type remoteInstance struct {
	proc  Proc
	pid   int // a local process's; 0 on an agent
	stdin io.WriteCloser
	dw    *deliveryWriter
	done  chan struct{} // closed when the child's "done" (or EOF) arrives
	// offset is proc.ClockOffsetNs; lost is proc.Lost.
	offset int64
	lost   <-chan struct{}
	// sent counts the deliveries handed to the process (or, once it is
	// lost, failed in its place).
	sent atomic.Int64

	mu      sync.Mutex
	pending results.PhaseSet
	// reported is set when a report added to pending since the last Swap.
	reported bool
	// outcomes is every outcome latency the process reported.
	outcomes results.OutcomeSet
	counts   Snapshot
	// history is the holders' events reported since the last drain.
	history []clientEvent
	err     error
	stopped bool
}

var (
	_ instance = (*remoteInstance)(nil)
	_ Pauser   = (*remoteInstance)(nil)
)

// startRemote starts instance cfg.ID as a process: a child of this one
// (sharing page, if not nil: see seqStore), or with pl, wherever pl puts
// it.
func startRemote(ctx context.Context, cfg InstanceConfig, storeAddr string, pl Placement, page *store.SeqPage, log io.Writer) (*remoteInstance, error) {
	var proc Proc
	var pid int
	if pl != nil {
		p, err := pl.Spawn(ctx, cfg.ID, cfg.Scenario.Instances, func(addr string) ([]byte, error) { return ChildConfig(cfg, addr) })
		if err != nil {
			return nil, err
		}
		proc = p
	} else {
		p, err := startLocal(cfg, storeAddr, page, log)
		if err != nil {
			return nil, err
		}
		proc, pid = p, p.cmd.Process.Pid
	}
	stdin := proc.Stdin()
	r := &remoteInstance{proc: proc, pid: pid, stdin: stdin, dw: newDeliveryWriter(stdin), done: make(chan struct{}),
		offset: proc.ClockOffsetNs(), lost: proc.Lost(), pending: results.NewPhaseSet(), outcomes: results.NewOutcomeSet()}
	ready := make(chan error, 1)
	go r.read(proc.Stdout(), ready)
	var err error
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(readyTimeout):
		err = errors.New("instance process did not start in time")
	}
	if err != nil {
		r.kill()
		return nil, err
	}
	return r, nil
}

func (r *remoteInstance) read(stdout io.Reader, ready chan<- error) {
	defer close(r.done)
	dec := gob.NewDecoder(bufio.NewReader(stdout))
	readySent := false
	signal := func(err error) {
		if !readySent {
			readySent = true
			ready <- err
		}
	}
	for {
		var m childMsg
		if err := dec.Decode(&m); err != nil {
			signal(errors.New("instance process exited before it was ready"))
			return
		}
		switch m.Kind {
		case "ready":
			signal(nil)
		case "error":
			signal(&childErr{msg: m.Err, lost: m.Lost})
			return
		case "stats", "done":
			r.mu.Lock()
			r.counts = m.Counts
			for p, s := range m.Hists {
				if p < len(r.pending) {
					r.reported = true
					s.mergeInto(r.pending[p])
				}
			}
			for o, s := range m.Outcomes {
				if o < len(r.outcomes) {
					s.mergeInto(r.outcomes[o])
				}
			}
			for i := range m.History {
				// Onto the coordinator's clock.
				ev := &m.History[i]
				ev.Inv -= r.offset
				ev.Ret -= r.offset
				if ev.Claim != 0 {
					ev.Claim -= r.offset
				}
			}
			r.history = append(r.history, m.History...)
			r.mu.Unlock()
			if m.Kind == "done" {
				return
			}
		}
	}
}

// Deliver sends d to the instance process, batched with whatever else is
// queued for it. It blocks while the process's input is full (for example
// while it is paused), as a real connection would. Once the process's
// agent is lost, d fails at once (Counts: ErrClassAgentLost).
func (r *remoteInstance) Deliver(ctx context.Context, d Delivery) error {
	if d.IntendedNs != 0 { // a closed loop's is 0: the worker's own time
		d.IntendedNs += r.offset
	}
	if r.isLost() {
		r.sent.Add(1)
		return nil
	}
	if err := r.dw.Deliver(ctx, d); err != nil {
		if r.isLost() {
			r.sent.Add(1)
			return nil
		}
		return err
	}
	r.sent.Add(1)
	return nil
}

func (r *remoteInstance) isLost() bool {
	select {
	case <-r.lost:
		return true
	default:
		return false
	}
}

// DrainHistory appends the holders' events the process reported since
// the last drain, on the coordinator's clock, to into.
func (r *remoteInstance) DrainHistory(into []clientEvent) []clientEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	into = append(into, r.history...)
	r.history = r.history[:0]
	return into
}

// Pid is a local instance process's pid; 0 for one on an agent.
func (r *remoteInstance) Pid() int { return r.pid }

// Pause stops the process (SIGSTOP).
func (r *remoteInstance) Pause() error { return r.proc.Pause() }

// Resume continues it (SIGCONT).
func (r *remoteInstance) Resume() error { return r.proc.Resume() }

// Process names the process: its pid, or its agent.
func (r *remoteInstance) Process() string { return r.proc.Process() }

// Swap moves what the process reported since the last Swap into into.
func (r *remoteInstance) Swap(into results.PhaseSet) {
	r.mu.Lock()
	// The collector drains every few milliseconds, the process reports
	// every statsEvery: merge and clear the histograms only when a
	// report came in between.
	if r.reported {
		into.Merge(r.pending)
		r.pending.Reset()
		r.reported = false
	}
	r.mu.Unlock()
}

// Outcomes returns every acquire latency by outcome the process reported.
func (r *remoteInstance) Outcomes() results.OutcomeSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes
}

// Counts returns the process's last reported counters; once its agent is
// lost, every delivery sent that it had not reported as taken counts as
// taken and failed, ErrClassAgentLost.
func (r *remoteInstance) Counts() Snapshot {
	r.mu.Lock()
	s := r.counts
	r.mu.Unlock()
	if r.isLost() {
		if n := r.sent.Load() - s.Deliveries; n > 0 {
			s.Deliveries += n
			s.Errors[ecAgentLost] += n
		}
	}
	return s
}

// Stop closes the process's input, waits for it to drain and report, and
// reaps it; a process that has not exited within stopTimeout is killed.
func (r *remoteInstance) Stop() error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	r.mu.Unlock()
	timeout := time.NewTimer(stopTimeout)
	defer timeout.Stop()
	r.dw.Close()
	select {
	case <-r.dw.Done():
	case <-timeout.C:
		r.kill()
		<-r.done
		return errors.New("instance process did not take its deliveries in time; killed")
	}
	_ = r.stdin.Close()
	select {
	case <-r.done:
	case <-timeout.C:
		r.kill()
		<-r.done
		return errors.New("instance process did not stop in time; killed")
	}
	// Its report and output are done, but it may not have exited (a
	// reader that stopped at a bad message leaves its output unread).
	waited := make(chan error, 1)
	go func() { waited <- r.proc.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-timeout.C:
		r.kill()
		return errors.New("instance process did not exit in time; killed")
	}
	if r.isLost() {
		return nil // counted: its deliveries failed as agent_lost
	}
	return err
}

// stopTimeout bounds an instance process's drain: 60 seconds.
const stopTimeout = 60 * time.Second

func (r *remoteInstance) kill() {
	r.dw.Close()
	r.proc.Kill()
}
