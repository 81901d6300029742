package faults

import (
	"context"
	"sync/atomic"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
)

// Trap states.
const (
	trapIdle int32 = iota
	trapArmed
	trapSprung
	trapDisarmed
)

// trap catches one holder entering its critical section, synchronously
// inside the store's Enter (FaultEnv.OnEnter), so that the fault acts while
// that holder is certainly inside. It catches only a payment's first
// holder, which will write it (package doc: "How the faults hit every
// time").
type trap struct {
	// entered remembers entered payments without a lock on the hot path:
	// slot p mod its length holds p+1 once payment p's first Enter was seen
	// (0: none yet), set by compare-and-swap. A run longer than enteredSlots
	// payments keeps about the last enteredSlots, far more than in flight.
	entered []atomic.Int64
	state   atomic.Int32
	// want filters the holders the trap may catch (nil: any).
	want func(store.EnterReq) bool
	// act runs in the hook, in the holder's Enter, when the trap springs.
	act    func(store.EnterReq)
	sprung chan store.EnterReq
	env    *loadgen.FaultEnv
	// aims: the trap belongs to a designed strike, which catches only a
	// holder whose payment another delivery is asking for, and is judged
	// on whether it landed (FaultEnv.OtherAsking, Aim).
	aims bool
}

// enteredSlots bounds a trap's memory of entered payments: 2²⁰ (8 MB).
const enteredSlots = 1 << 20

// newTrap registers a trap's hook on env.
func newTrap(env *loadgen.FaultEnv, want func(store.EnterReq) bool, act func(store.EnterReq)) *trap {
	slots := enteredSlots
	if n, ok := env.Scenario.PaymentBound(); ok {
		slots = max(1, min(n, enteredSlots))
	}
	t := &trap{
		entered: make([]atomic.Int64, slots),
		want:    want,
		act:     act,
		sprung:  make(chan store.EnterReq, 1),
		env:     env,
	}
	env.OnEnter(t.hook)
	return t
}

// first marks payment p entered and reports whether it was the first time.
// A slot taken by a later payment is not given back to an earlier one: its
// Enters all count as not first.
func (t *trap) first(p int64) bool {
	if p < 0 {
		return false
	}
	slot := &t.entered[p%int64(len(t.entered))]
	for {
		old := slot.Load()
		if old >= p+1 {
			return false
		}
		if slot.CompareAndSwap(old, p+1) {
			return true
		}
	}
}

func (t *trap) hook(r store.EnterReq) {
	if !t.first(r.Payment) || t.state.Load() != trapArmed {
		return
	}
	// A one-way Enter (the sequenced store's) is applied after its
	// holder went on: it may be out already. Only its payment is marked.
	if !r.Waiting {
		return
	}
	if t.want != nil && !t.want(r) {
		return
	}
	if t.aims && !t.env.OtherAsking(r) {
		return
	}
	if !t.state.CompareAndSwap(trapArmed, trapSprung) {
		return
	}
	if t.aims {
		t.env.Aim(r)
	}
	t.act(r)
	t.sprung <- r
}

// arm lets the trap spring from now on, once; a fault that strikes again
// arms it again after wait returned (its hook has then run to the end, so
// the trap cannot spring twice for one arm). Whatever the fault set up
// before arm is visible to the hook (the state is the synchronisation).
// Until wait returns, holders wait inside their Enters (FaultEnv.ArmTrap).
func (t *trap) arm() {
	t.env.ArmTrap()
	t.state.Store(trapArmed)
}

// wait returns the caught holder's request once the trap has sprung (its act
// has run), or ok=false when ctx ended first; the trap is disarmed then, so
// it cannot spring after the fault gave up on it.
func (t *trap) wait(ctx context.Context) (r store.EnterReq, ok bool) {
	defer t.env.DisarmTrap()
	select {
	case r = <-t.sprung:
		return r, true
	case <-ctx.Done():
	}
	if t.state.CompareAndSwap(trapArmed, trapDisarmed) {
		return store.EnterReq{}, false
	}
	// It sprang at the same moment: its act ran, so it must be undone.
	return <-t.sprung, true
}
