package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// DefaultCallTimeout is the deadline of a request whose context has none
// (and, for a blocking acquire, no Config.AcquireTimeout either): 10
// seconds. The adapter is lost AnswerGrace after it.
const DefaultCallTimeout = 10 * time.Second

// Strategy is a lock strategy backed by one adapter process.
type Strategy struct {
	p     *proc
	hello Hello
	ttl   time.Duration
	// acquireTimeout is a blocking acquire's wait when its context has no
	// deadline.
	acquireTimeout time.Duration
}

var (
	_ strategies.Strategy = (*Strategy)(nil)
	_ strategies.Blocker  = (*Strategy)(nil)
	_ strategies.Waiter   = (*lease)(nil)
	_ strategies.Extender = (*extLease)(nil)
)

// New starts the adapter cmd for cfg and reads its hello. Its errors (the
// adapter could not start, exited, sent no hello within HelloTimeout)
// are one line naming the adapter, and wrap strategies.ErrAdapterLost
// once the process has started.
func New(ctx context.Context, cmd Command, cfg strategies.Config) (*Strategy, error) {
	cfg = cfg.WithDefaults()
	p, h, err := start(ctx, cmd, cfg, openLog(cfg, cmd))
	if err != nil {
		return nil, err
	}
	s := &Strategy{p: p, hello: h, ttl: cfg.TTL, acquireTimeout: cfg.AcquireTimeout}
	if s.acquireTimeout <= 0 {
		s.acquireTimeout = DefaultCallTimeout
	}
	if h.Backend != "none" {
		if err := s.probe(ctx, cfg.Owner); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ProbeTimeout bounds the probe acquire New makes: 3 seconds.
const ProbeTimeout = 3 * time.Second

// probe takes and releases a lock of the strategy's own, so that a down
// server is reported by New, as a Factory should, although the protocol
// has no call but the lock's own and an adapter may connect lazily. A
// lock held by someone else is a server that answers.
func (s *Strategy) probe(ctx context.Context, owner string) error {
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	l, err := s.Acquire(pctx, "lockbench-probe:"+owner)
	switch {
	case err == nil:
		rctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		_ = l.Release(rctx)
		return nil
	case errors.Is(err, strategies.ErrNotAcquired):
		return nil
	case errors.Is(err, strategies.ErrUnavailable), errors.Is(err, strategies.ErrAdapterLost), ctx.Err() != nil:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (its server is down, or it hangs): %w", s.p.cmd.errorf("no answer to a probe acquire within %v", ProbeTimeout), strategies.ErrUnavailable)
	}
	return err
}

// openLog opens the adapter's log: adapters/<owner>.log in the run
// directory, whose lines are redacted, each start of an adapter (one per
// run of a command of many runs) after a line naming it; a sink that
// discards everything when there is no run directory or the file cannot
// be made.
func openLog(cfg strategies.Config, cmd Command) io.WriteCloser {
	if cfg.RunDir == "" {
		return nopCloser{io.Discard}
	}
	dir := filepath.Join(cfg.RunDir, "adapters")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nopCloser{io.Discard}
	}
	f, err := os.OpenFile(filepath.Join(dir, cfg.Owner+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nopCloser{io.Discard}
	}
	w := newRedactor(f)
	fmt.Fprintf(w, "=== %s: %s, TTL %v, acquire timeout %v\n", time.Now().UTC().Format(time.RFC3339), strings.Join(append([]string{cmd.Path}, cmd.Args...), " "), cfg.TTL, cfg.AcquireTimeout)
	return w
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Hello is what the adapter said about itself.
func (s *Strategy) Hello() Hello { return s.hello }

// Blocks reports whether the adapter waits inside acquire (its hello's
// blocking capability): callers then give Acquire a deadline instead of
// retrying.
func (s *Strategy) Blocks() bool { return s.hello.Capabilities.Blocking }

// Acquire asks the adapter for the lock on key. A blocking adapter is
// given the time left until ctx's deadline (at most Config.AcquireTimeout)
// as its timeout_ms, and is sent
// cancel when ctx ends first; Acquire then returns at once, and a lock the
// adapter grants all the same is released.
func (s *Strategy) Acquire(ctx context.Context, key string) (strategies.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dl, has := ctx.Deadline()
	var timeoutMs int64
	if s.hello.Capabilities.Blocking {
		// The adapter waits until the caller's deadline, or the scenario's
		// acquire timeout if that comes first (a caller without one).
		if limit := time.Now().Add(s.acquireTimeout); !has || limit.Before(dl) {
			dl = limit
		}
		timeoutMs = max(time.Until(dl).Milliseconds(), 0)
	} else if !has {
		dl = time.Now().Add(DefaultCallTimeout)
	}
	c, err := s.p.send(request{Op: opAcquire, Key: key, TTLMs: s.ttl.Milliseconds(), TimeoutMs: &timeoutMs}, dl)
	if err != nil {
		return nil, err
	}
	m, err := s.p.wait(ctx, c)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			s.abandon(c, dl)
		}
		return nil, err
	}
	if !m.OK {
		return nil, s.answerErr(ctx, "acquire "+key, m)
	}
	l := &lease{s: s, id: c.id, key: key, token: m.Token, waited: m.Waited, held: c.held}
	switch {
	case s.hello.Lease != LeaseTTL:
		l.noDeadline = true
	case m.ValidMs != nil:
		// Counted from the answer's arrival: the adapter measured it
		// just before answering, a pipe's latency ago.
		l.deadline.Set(time.Now().Add(time.Duration(*m.ValidMs) * time.Millisecond))
	default:
		l.deadline.Set(time.Now().Add(s.ttl))
	}
	if s.hello.Capabilities.Extend {
		return &extLease{l}, nil
	}
	return l, nil
}

// abandon sends cancel for an acquire whose caller gave up, and releases
// the lock if the adapter grants it all the same. The adapter has
// AnswerGrace from now (or from the request's deadline, if later) to answer
// the acquire.
func (s *Strategy) abandon(c *call, deadline time.Time) {
	if time.Until(deadline) > 0 {
		c.timer.Reset(AnswerGrace)
	}
	if err := s.p.write(request{Op: opCancel, Target: c.id}); err != nil {
		return
	}
	go func() {
		m, err := s.p.wait(context.Background(), c)
		if err != nil || !m.OK {
			return
		}
		// The adapter should have released a lock granted after the
		// cancel itself; it answered ok instead, so lockbench does.
		rc, err := s.p.send(request{Op: opRelease, Lock: c.id}, time.Now().Add(DefaultCallTimeout))
		if err == nil {
			_, _ = s.p.wait(context.Background(), rc)
		}
	}()
}

// answerErr maps an error answer onto the strategies package's errors.
func (s *Strategy) answerErr(ctx context.Context, what string, m message) error {
	msg := ""
	if m.Message != "" {
		msg = ": " + oneLine(redact(m.Message))
	}
	switch m.Error {
	case errNotAcquired:
		return strategies.ErrNotAcquired
	case errNotOwner:
		return strategies.ErrNotOwner
	case errUnavailable:
		return fmt.Errorf("%s: %s%s: %w", s.hello.Name, what, msg, strategies.ErrUnavailable)
	case errTimeout:
		return fmt.Errorf("%s: %s: server call timed out%s: %w", s.hello.Name, what, msg, context.DeadlineExceeded)
	case errCancelled:
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%s: %s: %w", s.hello.Name, what, context.Canceled)
	}
	return fmt.Errorf("%s: %s: %s%s", s.hello.Name, what, m.Error, msg)
}

// Close ends the adapter: it is killed, so that leases still held are not
// released (they expire by their TTL, or with their session).
func (s *Strategy) Close() error {
	s.p.close()
	return nil
}
