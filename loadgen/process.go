package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	envChild    = "LOCKBENCH_CHILD"
	envInstance = "LOCKBENCH_INSTANCE"
	childName   = "instance"
	statsEvery  = 250 * time.Millisecond
	// envStoreToken is the agent's token (package loadgen/agent's
	// TokenEnv), which an instance on an agent presents to the store.
	envStoreToken = "LOCKBENCH_AGENT_TOKEN"
	readyTimeout  = 20 * time.Second
	// EnvInstanceProfile, set to a directory, makes each instance process
	// write its CPU profile there (instance-ID-PID.pprof) for its whole
	// life: where a process-mode run's CPU goes beyond the coordinator's
	// own profile (--cpuprofile, or go test's -cpuprofile).
	EnvInstanceProfile = "LOCKBENCH_INSTANCE_CPUPROFILE"
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
	if dir := os.Getenv(EnvInstanceProfile); dir != "" {
		if stop, err := startChildProfile(dir, cfg.ID); err == nil {
			defer stop()
		} else {
			fmt.Fprintln(os.Stderr, "lockbench instance:", err)
		}
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
	// An instance on an agent presents the agent's token to the
	// coordinator's store (the agent's environment is the process's).
	acc, err := store.DialToken(ctx, cfg.StoreAddr, os.Getenv(envStoreToken))
	var page *store.SeqPage
	if err == nil {
		page, err = childSeqPage()
		// The page outlives the client (defers run last first): Close
		// flushes the client's last frames, and until it has, the
		// client's reader may still answer a mark with a number taken
		// from the page; an unmapped page is a SIGSEGV that loses every
		// frame still queued.
		if page != nil {
			defer page.Close()
		}
		defer acc.Close()
	}
	if err == nil {
		if page != nil {
			acc.Sequence(page)
		} else if cfg.StoreArrive {
			acc.Arrive()
		}
		var inst *Instance
		inst, err = NewInstance(ctx, cfg.InstanceConfig, acc)
		if err == nil {
			return serveChild(ctx, inst, in, send)
		}
	}
	_ = send(childMsg{Kind: "error", Err: err.Error()})
	return err
}

// startChildProfile profiles this instance process's CPU into dir until
// stop is called (EnvInstanceProfile).
func startChildProfile(dir string, id int) (stop func(), err error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("instance-%d-%d.pprof", id, os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func serveChild(ctx context.Context, inst *Instance, in io.Reader, send func(childMsg) error) error {
	if err := send(childMsg{Kind: "ready"}); err != nil {
		return err
	}
	inst.Start(ctx)
	// One set for every report, emptied after each: a new one each time
	// was four histograms' counts (some 180 KB each) allocated four times
	// a second.
	set := results.NewPhaseSet()
	stats := func(kind string) error {
		defer set.Reset()
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

// Proc is an instance process as its coordinator drives it: a child of
// this process, or one on an agent (a Spawner's). Its stdin takes the
// delivery records, its stdout gives the reports.
type Proc interface {
	Pauser
	Stdin() io.WriteCloser
	Stdout() io.Reader
	// Kill ends the process now.
	Kill()
	// Wait reaps the process once its stdout has ended.
	Wait() error
	// ClockOffsetNs is the process's clock minus the coordinator's: each
	// delivery's intended start is shifted by it, so that latency
	// measured on the process's host is against the intended time.
	ClockOffsetNs() int64
	// Lost is closed if the process's host is lost (its agent stopped
	// answering); nil for a local process.
	Lost() <-chan struct{}
}

// Pauser is implemented by instances that are processes, local or on an
// agent: a fault stops one whole (SIGSTOP; an agent signals its own child)
// and continues it (SIGCONT).
type Pauser interface {
	// Pause stops the process, and returns once it has been signalled.
	Pause() error
	// Resume continues it.
	Resume() error
	// Process names it for a fault's timeline: "pid 1234", "agent
	// 10.0.0.2:7070".
	Process() string
}

// Spawner starts instance processes elsewhere than as children of this
// process: on agents (package loadgen/agent's Pool).
type Spawner interface {
	// Place serves st to the processes of one run (with o, and the
	// token they present), until the Placement is closed.
	Place(st store.Store, o store.ServeOptions) (Placement, error)
}

// Placement is where one run's instance processes go.
type Placement interface {
	// Spawn starts instance id of n; conf makes its configuration from
	// the address at which it reaches the store.
	Spawn(ctx context.Context, id, n int, conf func(storeAddr string) ([]byte, error)) (Proc, error)
	// Close stops serving the store.
	Close() error
}

// ChildConfig is the configuration an instance process is started with,
// reaching its store at storeAddr.
func ChildConfig(cfg InstanceConfig, storeAddr string) ([]byte, error) {
	return json.Marshal(struct {
		InstanceConfig
		StoreAddr string
	}{cfg, storeAddr})
}

// ChildCommand is the command of an instance process with conf: exe
// re-executed as an instance, in its own process group (Ctrl-C reaches
// the coordinator or agent, which stops the instances in order), killed
// if its parent dies, its standard error written to stderr; with procs >
// 0 its GOMAXPROCS, unless the environment sets one; and its runtime's
// monitor kept out of its deep sleep (childGODEBUG).
func ChildCommand(exe string, conf []byte, procs int, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"="+childName, envInstance+"="+string(conf))
	if procs > 0 && os.Getenv("GOMAXPROCS") == "" {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	cmd.Stderr = stderr
	if v, ours := childGODEBUG(os.Getenv("GODEBUG")); ours {
		cmd.Env = append(cmd.Env, "GODEBUG="+v)
		cmd.Stderr = &schedTraceFilter{w: stderr}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// childSchedTrace is the schedtrace GODEBUG setting of instance
// processes: the longest period it takes (2³¹−1 ms, 24.8 days).
//
// Why: the Go runtime's monitor thread (sysmon) goes into a deep sleep
// whenever it finds every P idle, and the next system call wakes it
// (a futex wake-up of another thread), after which it polls every 20 µs
// again until it finds them idle once more. An instance process has one P
// and a few workers that all wait on the lock server most of the time, so
// it goes idle between almost every two replies, and each time it woke
// its monitor too: on a 2-vCPU VM, process-mode setnx made 0.9–1.4
// context switches a payment with the deep sleep and 0.4–0.6 without
// (goroutine mode: 0.3–0.5), and took 15–20% more CPU a payment
// (BenchmarkAgentTransport). With schedtrace set the monitor never takes
// the deep sleep (runtime/proc.go, sysmon: it would miss its next trace)
// and backs off to a 10 ms poll while idle.
// Its one side effect is a "SCHED …" line on standard error each period,
// the first once the host's monotonic clock (its uptime) passes the
// period: schedTraceFilter drops them.
const childSchedTrace = "schedtrace=2147483647"

// childGODEBUG is the GODEBUG of an instance process whose parent has
// parent: parent with childSchedTrace added, and true; or parent as it
// is, and false, when it sets schedtrace itself (its trace is then
// wanted, and passed on whole).
func childGODEBUG(parent string) (string, bool) {
	for _, kv := range strings.Split(parent, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "schedtrace=") {
			return parent, false
		}
	}
	if parent == "" {
		return childSchedTrace, true
	}
	return parent + "," + childSchedTrace, true
}

// schedTraceFilter passes an instance process's standard error on to w
// less the runtime's "SCHED …" trace lines (childSchedTrace). A line is
// passed on as soon as it cannot be one (a partial line too, once its
// start differs), so that nothing the instance reports waits for a
// newline; what could still become a trace line is held until it is
// decided.
type schedTraceFilter struct {
	w       io.Writer
	held    []byte // the start of a line, a prefix of "SCHED "
	inTrace bool   // within a trace line, until its newline
	inLine  bool   // within a line passed on, until its newline
}

const schedTracePrefix = "SCHED "

func (f *schedTraceFilter) Write(b []byte) (int, error) {
	n := len(b)
	var out []byte
	for len(b) > 0 {
		if f.inTrace {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			f.inTrace, b = false, b[i+1:]
			continue
		}
		line := b // to its newline, if b has one
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		if f.inLine {
			out, b = append(out, line...), b[len(line):]
			f.inLine = line[len(line)-1] != '\n'
			continue
		}
		take := line[:min(len(line), len(schedTracePrefix)-len(f.held))]
		start := append(f.held, take...)
		if string(start) == schedTracePrefix {
			f.held, f.inTrace, b = f.held[:0], true, b[len(take):]
			continue
		}
		if len(take) == len(line) && line[len(line)-1] != '\n' && strings.HasPrefix(schedTracePrefix, string(start)) {
			f.held = start // the rest of b could still start a trace line
			break
		}
		out = append(append(out, f.held...), line...)
		f.held, b = f.held[:0], b[len(line):]
		f.inLine = line[len(line)-1] != '\n'
	}
	if len(out) > 0 {
		if _, err := f.w.Write(out); err != nil {
			return n, err
		}
	}
	return n, nil
}

// ProcsFor is an instance process's GOMAXPROCS when n of them share this
// host's cpus cores: its share, at least 1. With every process free to run
// a P per core, idle Ps spin and wake one another across processes, which
// costs more than the work, as it would for app servers sharing a host.
func ProcsFor(cpus, n int) int { return max(1, cpus/max(1, n)) }

// localProc is an instance process that is a child of this one.
type localProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
}

var _ Proc = (*localProc)(nil)

// startLocal starts instance cfg as a child process reaching its store at
// storeAddr; given a sequence page, as a sequenced client of it (its fd 3).
func startLocal(cfg InstanceConfig, storeAddr string, page *store.SeqPage, log io.Writer) (*localProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	conf, err := ChildConfig(cfg, storeAddr)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = io.Discard
	}
	cmd := ChildCommand(exe, conf, ProcsFor(runtime.NumCPU(), cfg.Scenario.Instances), log)
	if page != nil {
		cmd.ExtraFiles = []*os.File{page.File()}
		cmd.Env = append(cmd.Env, envSeqFD+"="+strconv.Itoa(seqFD))
	}
	p := &localProc{cmd: cmd}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *localProc) Stdin() io.WriteCloser { return p.stdin }
func (p *localProc) Stdout() io.Reader     { return p.stdout }
func (p *localProc) Pause() error          { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *localProc) Resume() error         { return p.cmd.Process.Signal(syscall.SIGCONT) }
func (p *localProc) Process() string       { return fmt.Sprintf("pid %d", p.cmd.Process.Pid) }
func (p *localProc) ClockOffsetNs() int64  { return 0 }
func (p *localProc) Lost() <-chan struct{} { return nil }
func (p *localProc) Wait() error           { return p.cmd.Wait() }

func (p *localProc) Kill() {
	// A paused process must be continued to die promptly and cleanly.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}

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
	err      error
	stopped  bool
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
			signal(errors.New(m.Err))
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

// mergeInto adds s to h (a histogram of results.NewHistogram's bounds):
// each bucket's count recorded at a value of that bucket. (Rebuilding the
// whole snapshot and merging it walked every one of its tens of thousands
// of buckets twice: an eighth of the coordinator's CPU in a process-mode
// run.)
func (s sparseHist) mergeInto(h *hdrhistogram.Histogram) {
	if s.Len == 0 || len(s.Index) != len(s.Count) {
		return
	}
	vs := bucketValues()
	for _, i := range s.Index {
		if i < 0 || int(i) >= len(vs) {
			s.mergeSnapshot(h) // a bucket past the table: the long way
			return
		}
	}
	for k, i := range s.Index {
		_ = h.RecordValues(vs[i], s.Count[k])
	}
}

// mergeSnapshot adds s to h by way of a whole snapshot.
func (s sparseHist) mergeSnapshot(h *hdrhistogram.Histogram) {
	counts := make([]int64, s.Len)
	for k, i := range s.Index {
		if i >= 0 && int(i) < len(counts) {
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

// bucketValues is, for each bucket of a results.NewHistogram's snapshot
// up to the one of its highest trackable value, the lowest value it
// holds: the library's own Distribution of a histogram with that value
// recorded, whose bars come one per bucket in snapshot order.
var bucketValues = sync.OnceValue(func() []int64 {
	h := results.NewHistogram()
	_ = h.RecordValue(results.MaxLatencyNs)
	bars := h.Distribution()
	vs := make([]int64, len(bars))
	for i, b := range bars {
		vs[i] = b.From
	}
	return vs
})
