package faults

import (
	"context"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
)

// catcher catches a lock holder inside its critical section with a trap,
// keeps it there (an instance process stopped, an in-process section made
// longer), and lets it go: every fault that acts while a holder is inside
// uses one. mu keeps the stopped process, so it is continued at most once
// per stop ("Catching a holder" in the package doc).
type catcher struct {
	env     *loadgen.FaultEnv
	trap    *trap
	handles []loadgen.InstanceHandle // copied by see before the trap is armed

	mu      sync.Mutex
	stopped loadgen.Pauser // the holder process stopped, nil when none
}

// newCatcher sets a trap on env that catches a holder want accepts (nil:
// any) and runs act in that holder's Enter.
func newCatcher(env *loadgen.FaultEnv, want func(store.EnterReq) bool, act func(store.EnterReq)) *catcher {
	return &catcher{env: env, trap: newTrap(env, want, act)}
}

// aim makes the catcher's strikes designed ones (not schedule=random):
// each catches a holder whose payment's other delivery is asking for the
// lock, and is judged on whether that delivery asked while the lock was
// forgotten (FaultEnv.Forgot).
func (c *catcher) aim(designed bool) { c.trap.aims = designed }

// see copies the run's instances, which the hook stops or slows; Inject
// calls it, before the first catch.
func (c *catcher) see(instances []loadgen.InstanceHandle) {
	c.handles = append([]loadgen.InstanceHandle(nil), instances...)
}

// catch arms the trap and returns the caught holder's request once act has
// run, or ok=false when ctx ended first (the trap is then disarmed).
func (c *catcher) catch(ctx context.Context) (r store.EnterReq, ok bool) {
	c.trap.arm()
	return c.trap.wait(ctx)
}

// stop stops the process of r's instance, which must be a Pauser, for
// resume to continue. It returns that process, to be named, whether or not
// it could be stopped.
func (c *catcher) stop(r store.EnterReq) (loadgen.Pauser, error) {
	proc := c.handles[r.Instance].(loadgen.Pauser)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := proc.Pause(); err != nil {
		return proc, err
	}
	c.stopped = proc
	c.env.HolderStopped()
	return proc, nil
}

// keep keeps the holder r inside its critical section: its process is
// stopped until resume, or an in-process instance's section is made to last
// d. how names it for the timeline: "stopped", or "slowed" (also when the
// process could not be stopped: err says why, and the holder goes on).
func (c *catcher) keep(r store.EnterReq, d time.Duration) (how string, err error) {
	if _, ok := c.handles[r.Instance].(loadgen.Pauser); !ok {
		c.env.SlowNext(r.Instance, d)
		return "slowed", nil
	}
	if _, err := c.stop(r); err != nil {
		return "slowed", err
	}
	return "stopped", nil
}

// holding reports whether a holder process is stopped.
func (c *catcher) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped != nil
}

// resume continues the holder process stopped, if any, and returns it (nil:
// none). A nil catcher (a fault's Close after its Setup failed, or a mode
// that catches nobody) has none.
func (c *catcher) resume() (loadgen.Pauser, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	proc := c.stopped
	if proc == nil {
		return nil, nil
	}
	c.stopped = nil
	return proc, proc.Resume()
}

// letGo is resume for a fault that need not name the process.
func (c *catcher) letGo() error {
	_, err := c.resume()
	return err
}
