package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// Fault is something that breaks locks during a run (package faults
// has them all; the README's fault table says what each breaks). The runner
// calls Setup before the instances start (a fault may reroute the lock
// config, e.g. through a proxy), runs Inject alongside the load, and calls
// Close at the end. Inject must undo what it did (resume, restart, heal)
// before it returns, and return promptly when ctx is cancelled.
type Fault interface {
	Name() string
	Setup(ctx context.Context, env *FaultEnv) error
	Inject(ctx context.Context, env *FaultEnv) error
	Close() error
}

// InstanceHandle is what a fault may do to any instance. One that is a
// process, local or on an agent, is also a Pauser: a fault stops it whole
// through that (never by a pid, which means nothing on another host).
type InstanceHandle interface {
	// Pid is the instance's process id when it is a child of this
	// process; 0 for an in-process instance or one on an agent.
	Pid() int
}

// FaultEnv is the run as a fault sees it.
type FaultEnv struct {
	Strategy string
	Info     strategies.Info
	Scenario Scenario
	// Lock is the lock config the instances will be built from; Setup may
	// change it (e.g. point a node at a proxy).
	Lock      strategies.Config
	Instances []InstanceHandle

	start time.Time
	// total is the run's payments when it has a bound (Scenario.PaymentBound),
	// 0 when it offers until its duration is over.
	total int
	// offers counts the payments offered; own serves unless a feed
	// keeps the counts on its own hot cache line (feed.offers).
	offers   *offerCounts
	own      offerCounts
	mu       sync.Mutex
	hooks    []func(store.EnterReq)
	events   []results.Event
	window   *results.Window
	hookFlag atomic.Bool
	// slows[i] is the hold (ns) SlowNext ordered for instance i's next
	// Enter, 0 for none.
	slows   []atomic.Int64
	loaded  atomic.Bool // every payment has been offered (or the load was stopped)
	strikes strikeLog
	// armed counts the traps armed (ArmTrap); while it is above 0 the
	// sequenced store's clients wait for their Enters (sync).
	armMu sync.Mutex
	armed int
	sync  func(on bool) // nil without a sequenced store
	// holdsEnters: see HoldsEnters.
	holdsEnters bool
	// asks follows the workers' acquires, to judge whether a designed
	// strike landed; nil when the instances do not run in this process
	// (or take no lock), and the strikes are not judged so.
	asks *askBoard
}

// offerCounts are the payments offered, and those of them offered after
// the warmup (measured).
type offerCounts struct {
	offered, measured atomic.Int64
}

// offerCounts returns where e's offers are counted.
func (e *FaultEnv) offerCounts() *offerCounts {
	if e.offers != nil {
		return e.offers
	}
	return &e.own
}

// HoldsEnters says, in Setup, that the fault's hooks hold holders inside
// their Enter (keep it from taking effect until something else has
// happened) or wait on servers there. The sequenced store cannot honour
// that: an event's place in its order is fixed when the holder sends it,
// and its one applier would wait for the hook. Such a run keeps the
// synchronous store.
func (e *FaultEnv) HoldsEnters() { e.holdsEnters = true }

// ArmTrap says a fault's trap is armed: until the matching DisarmTrap,
// holders must wait inside their Enter for its answer, so that the trap
// catches a holder certainly inside (store.EnterReq.Waiting). It matters
// only with the sequenced store, whose Enters are otherwise one-way.
func (e *FaultEnv) ArmTrap() {
	e.armMu.Lock()
	defer e.armMu.Unlock()
	e.armed++
	if e.armed == 1 && e.sync != nil {
		e.sync(true)
	}
}

// DisarmTrap undoes one ArmTrap.
func (e *FaultEnv) DisarmTrap() {
	e.armMu.Lock()
	defer e.armMu.Unlock()
	e.armed--
	if e.armed == 0 && e.sync != nil {
		e.sync(false)
	}
}

// syncWith makes set the switch ArmTrap and DisarmTrap turn (the
// sequenced store's page), setting it as the traps armed now say.
func (e *FaultEnv) syncWith(set func(on bool)) {
	e.armMu.Lock()
	defer e.armMu.Unlock()
	e.sync = set
	set(e.armed > 0)
}

// OnEnter registers f to run synchronously inside the store's Enter, before
// the holder gets its read back: the holder is then certainly inside its
// critical section (the `pause` fault stops its process there).
func (e *FaultEnv) OnEnter(f func(store.EnterReq)) {
	e.mu.Lock()
	e.hooks = append(e.hooks, f)
	e.mu.Unlock()
	e.hookFlag.Store(true)
}

// SlowNext makes instance's next critical section entered (its
// store.EnterResp.Slow) last d, whether the instance runs in-process, as
// a process or on an agent. Called from an OnEnter hook it slows the very
// holder the hook caught (unless another worker of the instance enters in
// between): the order rides on the answer to the Enter the hook runs in.
// An instance the run does not have is ignored.
func (e *FaultEnv) SlowNext(instance int, d time.Duration) {
	if instance >= 0 && instance < len(e.slows) {
		e.slows[instance].Store(int64(d))
	}
}

// takeSlow returns and clears instance's pending slow order.
func (e *FaultEnv) takeSlow(instance int) time.Duration {
	if instance < 0 || instance >= len(e.slows) {
		return 0
	}
	// Load first: a Swap is a locked instruction every critical section.
	if e.slows[instance].Load() == 0 {
		return 0
	}
	return time.Duration(e.slows[instance].Swap(0))
}

func (e *FaultEnv) enter(r store.EnterReq) {
	if !e.hookFlag.Load() {
		return
	}
	e.mu.Lock()
	hooks := e.hooks
	e.mu.Unlock()
	for _, h := range hooks {
		h(r)
	}
}

// Since is the time since the measured run started.
func (e *FaultEnv) Since() time.Duration { return time.Since(e.start) }

// Event records a step of the fault's timeline.
func (e *FaultEnv) Event(what string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, results.Event{AtNs: int64(e.Since()), What: what})
}

// Begin marks the start of a strike (and records what): a fault calls it
// once per strike, and End when the strike is undone. The fault window
// runs from the first strike's Begin to the last strike's End; each
// strike is counted (Summary.Strikes) and judged (Summary.UnsafeStrikes,
// see strikeLog).
func (e *FaultEnv) Begin(what string) {
	e.Event(what)
	e.strikes.begin(what)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.window == nil {
		e.window = &results.Window{StartNs: int64(e.Since())}
	}
}

// End marks the end of the current strike and of the fault window so far
// (and records what). A strike aimed at a payment (Aim) whose lock the
// fault said forgotten (Forgot) is judged: it missed when the payment's
// other delivery neither got an answer from the lock since then nor waited
// on it for AskSpan (askBoard.landed).
func (e *FaultEnv) End(what string) {
	e.Event(what)
	now := time.Now().UnixNano()
	var aim *strikeAim
	landed := false
	if e.asks != nil {
		aim, landed = e.asks.landed(now)
	}
	missed := aim != nil && !aim.deferred && !landed
	if missed {
		e.Event(fmt.Sprintf("strike missed: no other delivery asked for %s while it was forgotten (unless its window yet sees an unsafe outcome)", aim.key))
	}
	e.strikes.end(now, missed, aim)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.window != nil {
		e.window.EndNs = int64(e.Since())
	}
}

// OtherAsking reports whether the payment of the holder r is being asked
// for by another of its deliveries now, as a designed strike wants of the
// holder it catches: one whose contender is still queued, or asleep in
// its retry pause, would let the strike miss. It is true when that cannot
// be seen (instances in processes or on agents) or a payment has one
// delivery.
func (e *FaultEnv) OtherAsking(r store.EnterReq) bool {
	if e.asks == nil || e.asks.deferred || e.Scenario.Deliveries < 2 {
		return true
	}
	return e.asks.otherAsking(r.Payment, r.Instance, r.Worker)
}

// Aim says the current strike caught the holder r: it lands if another
// delivery asks for r's lock once the fault has made the lock forgotten
// (Forgot) and before the holder is let go (End).
func (e *FaultEnv) Aim(r store.EnterReq) {
	if e.asks != nil {
		e.asks.aim(r.LockKey, r.Payment, r.Instance, r.Worker)
	}
}

// HolderStopped says the aimed holder's whole process is stopped (SIGSTOP):
// its instance's other workers cannot ask for the lock while it is.
func (e *FaultEnv) HolderStopped() {
	if e.asks != nil {
		e.asks.holderStopped()
	}
}

// EndMissed ends the current strike as End does, counted missed (unless
// its window sees an unsafe outcome): a designed strike that began (Begin)
// but caught no holder.
func (e *FaultEnv) EndMissed(what string) {
	e.Event(what)
	if e.asks != nil {
		e.asks.landed(time.Now().UnixNano()) // drops an aim, if any
	}
	e.strikes.end(time.Now().UnixNano(), true, nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.window != nil {
		e.window.EndNs = int64(e.Since())
	}
}

// Forgot says the lock of the aimed holder is forgotten from at on (the
// node restarted empty, its clock jumped, its lease expired): a contender
// asking from then on would be granted it, or refused by a lock that held.
func (e *FaultEnv) Forgot(at time.Time) {
	if e.asks != nil {
		e.asks.forgot(at.UnixNano())
	}
}

// Missed reports whether the last strike ended judged missed, and no
// unsafe outcome has been counted since it began, so that a designed fault
// strikes again while the run has time.
func (e *FaultEnv) Missed() bool { return e.strikes.lastMissed() }

// Offering reports whether payments are still being offered: a fault that
// strikes again and again (schedule=random) stops once it is false.
func (e *FaultEnv) Offering() bool { return !e.loaded.Load() }

// WaitOffered waits until the given share (0..1) of the run's payments has
// been offered, or ctx is done. Faults use it to strike mid-run. A run
// with no bound on its payments (a closed-loop --duration run) has offered
// that share once that share of its warmup and duration has passed.
func (e *FaultEnv) WaitOffered(ctx context.Context, share float64) error {
	want := int64(share * float64(e.total))
	at := e.start.Add(-e.Scenario.Warmup).Add(time.Duration(share * float64(e.Scenario.Warmup+e.Scenario.Duration)))
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for e.total > 0 && e.offerCounts().offered.Load() < want || e.total == 0 && time.Now().Before(at) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// hookedStore runs the fault hooks inside Enter and hands the holder any
// slow order (FaultEnv.SlowNext) in its answer.
type hookedStore struct {
	store.Store
	env *FaultEnv
}

// Enter runs the hooks, then the store's Enter, then takes the instance's
// pending slow order into the answer. Only a successful Enter whose holder
// waits for the answer takes it: a holder that failed to enter does no
// work to slow, and a one-way Enter's answer reaches nobody (the order
// stays for the instance's next waiting Enter).
func (h hookedStore) Enter(ctx context.Context, r store.EnterReq) (store.EnterResp, error) {
	h.env.enter(r)
	resp, err := h.Store.Enter(ctx, r)
	if err == nil && r.Waiting {
		resp.Slow = h.env.takeSlow(r.Instance)
	}
	return resp, err
}
