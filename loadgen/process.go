package loadgen

import (
	"bufio"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
)

// Instance processes (`--instance-mode process`) are the same binary
// re-executed with these environment variables; MaybeRunChild, called first
// thing in main (and in TestMain), turns such a process into an instance.
const (
	envChild     = "LOCKBENCH_CHILD"
	envInstance  = "LOCKBENCH_INSTANCE"
	childName    = "instance"
	statsEvery   = 250 * time.Millisecond
	readyTimeout = 20 * time.Second
)

// An instance process takes its deliveries on stdin as fixed-size binary
// records, batched (transport.go); reaches the coordinator's store over a
// local socket with store.Client's pipelined binary frames; and reports
// its counters and latency histograms on stdout every statsEvery, as gob
// (a few messages a second: not worth a codec of its own).

// childMsg is what an instance process reports to the coordinator.
type childMsg struct {
	Kind   string // "ready", "stats", "done", "error"
	Err    string
	Counts Snapshot
	Hists  []sparseHist // one per phase: what was recorded since the last stats
	// Outcomes is the acquire latency by outcome since the last stats.
	Outcomes []sparseHist
}

// MaybeRunChild runs this process as an instance process and exits, if it
// was started as one; otherwise it returns at once. Call it at the start of
// main (and of TestMain in tests that use process mode), after every
// strategy package is imported.
func MaybeRunChild() {
	if os.Getenv(envChild) != childName {
		return
	}
	if err := runChild(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench instance:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(in io.Reader, out io.Writer) error {
	var cfg struct {
		InstanceConfig
		StoreAddr string
	}
	if err := json.Unmarshal([]byte(os.Getenv(envInstance)), &cfg); err != nil {
		return fmt.Errorf("bad %s: %w", envInstance, err)
	}
	bw := bufio.NewWriter(out)
	enc := gob.NewEncoder(bw)
	var encMu sync.Mutex
	send := func(m childMsg) error {
		encMu.Lock()
		defer encMu.Unlock()
		if err := enc.Encode(m); err != nil {
			return err
		}
		return bw.Flush()
	}
	ctx := context.Background()
	acc, err := store.Dial(ctx, cfg.StoreAddr)
	if err == nil {
		defer acc.Close()
		var inst *Instance
		inst, err = NewInstance(ctx, cfg.InstanceConfig, acc)
		if err == nil {
			return serveChild(ctx, inst, in, send)
		}
	}
	_ = send(childMsg{Kind: "error", Err: err.Error()})
	return err
}

func serveChild(ctx context.Context, inst *Instance, in io.Reader, send func(childMsg) error) error {
	if err := send(childMsg{Kind: "ready"}); err != nil {
		return err
	}
	inst.Start(ctx)
	stats := func(kind string) error {
		set := results.NewPhaseSet()
		inst.Swap(set)
		m := childMsg{Kind: kind, Counts: inst.Counts()}
		for _, h := range set {
			m.Hists = append(m.Hists, sparseOf(h))
		}
		// The instance keeps its outcomes for the whole run; send what
		// was added since the last stats.
		for _, h := range inst.Outcomes() {
			m.Outcomes = append(m.Outcomes, sparseOf(h))
			h.Reset()
		}
		return send(m)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(statsEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if stats("stats") != nil {
					return
				}
			}
		}
	}()
	// EOF: the coordinator is done with us.
	_ = readDeliveries(in, func(d Delivery) { _ = inst.Deliver(ctx, d) })
	err := inst.Stop()
	close(stop)
	wg.Wait()
	if serr := stats("done"); serr != nil {
		return serr
	}
	return err
}

// remoteInstance is the coordinator's side of an instance process.
type remoteInstance struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dw    *deliveryWriter
	done  chan struct{} // closed when the child's "done" (or EOF) arrives

	mu      sync.Mutex
	pending results.PhaseSet
	// outcomes is every outcome latency the process reported.
	outcomes results.OutcomeSet
	counts   Snapshot
	err      error
	stopped  bool
}

var _ instance = (*remoteInstance)(nil)

func startRemote(ctx context.Context, cfg InstanceConfig, storeAddr string, log io.Writer) (*remoteInstance, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	conf, err := json.Marshal(struct {
		InstanceConfig
		StoreAddr string
	}{cfg, storeAddr})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"="+childName, envInstance+"="+string(conf))
	if os.Getenv("GOMAXPROCS") == "" {
		// Each instance process gets its share of the machine's cores, as
		// an app server on a host shared with others would: with every
		// process free to run a P per core, idle Ps spin and wake one
		// another across processes, which costs more than the work.
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(max(1, runtime.NumCPU()/cfg.Scenario.Instances)))
	}
	// Its own process group (Ctrl-C reaches the coordinator, which stops the
	// instances in order) and killed with the coordinator if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if log == nil {
		log = io.Discard
	}
	cmd.Stderr = log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &remoteInstance{cmd: cmd, stdin: stdin, dw: newDeliveryWriter(stdin), done: make(chan struct{}), pending: results.NewPhaseSet(), outcomes: results.NewOutcomeSet()}
	ready := make(chan error, 1)
	go r.read(stdout, ready)
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
			signal(errors.New(m.Err))
			return
		case "stats", "done":
			r.mu.Lock()
			r.counts = m.Counts
			for p, s := range m.Hists {
				if p < len(r.pending) {
					s.mergeInto(r.pending[p])
				}
			}
			for o, s := range m.Outcomes {
				if o < len(r.outcomes) {
					s.mergeInto(r.outcomes[o])
				}
			}
			r.mu.Unlock()
			if m.Kind == "done" {
				return
			}
		}
	}
}

// Deliver sends d to the instance process, batched with whatever else is
// queued for it. It blocks while the process's input is full (for example
// while it is paused), as a real connection would.
func (r *remoteInstance) Deliver(ctx context.Context, d Delivery) error {
	return r.dw.Deliver(ctx, d)
}

// Pid is the instance process's pid.
func (r *remoteInstance) Pid() int { return r.cmd.Process.Pid }

// Swap moves what the process reported since the last Swap into into.
func (r *remoteInstance) Swap(into results.PhaseSet) {
	r.mu.Lock()
	into.Merge(r.pending)
	r.pending.Reset()
	r.mu.Unlock()
}

// Outcomes returns every acquire latency by outcome the process reported.
func (r *remoteInstance) Outcomes() results.OutcomeSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes
}

// Counts returns the process's last reported counters.
func (r *remoteInstance) Counts() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Stop closes the process's input, waits for it to drain and report, and
// reaps it; a process that does not finish within stopTimeout is killed.
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
	return r.cmd.Wait()
}

// stopTimeout bounds an instance process's drain: 60 seconds.
const stopTimeout = 60 * time.Second

func (r *remoteInstance) kill() {
	r.dw.Close()
	// A paused process must be continued to die promptly and cleanly.
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	_ = r.cmd.Process.Kill()
	_, _ = r.cmd.Process.Wait()
}

// sparseHist is a latency histogram (results.NewHistogram's bounds) as
// its non-zero buckets: a stats message carries a few hundred numbers per
// histogram where its snapshot has tens of thousands, most of them zero,
// which gob would encode four times a second per phase per instance.
type sparseHist struct {
	Len   int // the snapshot's number of buckets; 0 for an empty histogram
	Index []int32
	Count []int64
}

func sparseOf(h *hdrhistogram.Histogram) sparseHist {
	if h.TotalCount() == 0 {
		return sparseHist{}
	}
	snap := h.Export()
	sp := sparseHist{Len: len(snap.Counts)}
	for i, c := range snap.Counts {
		if c != 0 {
			sp.Index = append(sp.Index, int32(i))
			sp.Count = append(sp.Count, c)
		}
	}
	return sp
}

// mergeInto adds s to h.
func (s sparseHist) mergeInto(h *hdrhistogram.Histogram) {
	if s.Len == 0 || len(s.Index) != len(s.Count) {
		return
	}
	counts := make([]int64, s.Len)
	for k, i := range s.Index {
		if int(i) < len(counts) {
			counts[i] = s.Count[k]
		}
	}
	h.Merge(hdrhistogram.Import(&hdrhistogram.Snapshot{
		LowestTrackableValue:  results.MinLatencyNs,
		HighestTrackableValue: results.MaxLatencyNs,
		SignificantFigures:    results.SigFigs,
		Counts:                counts,
	}))
}
