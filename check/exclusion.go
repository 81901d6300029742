package check

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The kinds of a run (the header's kind).
const (
	kindLock        = "lock"
	kindTransaction = "transaction"
	kindQueue       = "queue"
)

// Exclusion is the mutual-exclusion check of one run.
type Exclusion struct {
	// Skipped is why the run was not checked; "" when it was.
	Skipped string
	// Keys counts the lock keys with an operation or a store overlap.
	Keys int
	// Results are the keys checked (at most Options.MaxKeys): those where
	// the store counted an overlap first, then the others by name.
	Results []KeyResult
	// Files are the visualisations written, of violated keys.
	Files []string
}

// skipReason says why the run of history h is not checked for mutual
// exclusion, or "" when it is.
func skipReason(h *history) string {
	switch h.hdr.kind {
	case kindLock:
		if h.acquires == 0 {
			return "no acquire succeeded"
		}
		return ""
	case kindTransaction:
		return h.hdr.strategy + " runs each delivery as one database transaction: no lock holder to check (its counts are)"
	case kindQueue:
		return h.hdr.strategy + " is a queue: its holds are messages, not locks"
	}
	return "kind " + h.hdr.kind + " is not a lock"
}

// checkExclusion checks every key of h (within opt's limits) and returns
// the results and, for the first opt.MaxHTML keys found violated, their
// checks to draw.
func checkExclusion(ctx context.Context, h *history, overlapKeys map[string]bool, opt *Options) (Exclusion, []keyCheck) {
	var ex Exclusion
	if ex.Skipped = skipReason(h); ex.Skipped != "" {
		return ex, nil
	}
	var first, rest []string
	for k, kd := range h.keys {
		switch {
		case overlapKeys[k]:
			first = append(first, k)
		case len(kd.ops) > 0:
			rest = append(rest, k)
		}
	}
	slices.Sort(first)
	slices.Sort(rest)
	keys := append(first, rest...)
	ex.Keys = len(keys)
	keys = keys[:min(len(keys), opt.MaxKeys)]

	checks := make([]keyCheck, len(keys))
	deadline := time.Now().Add(opt.Timeout)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(opt.Parallel, len(keys)) {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= len(keys) {
					return
				}
				ops, names := keyOps(h.keys[keys[j]].ops, h.hdr.uncertainty)
				checks[j] = checkKey(ctx, keys[j], ops, names, opt, deadline)
				checks[j].StoreOverlap = overlapKeys[keys[j]]
			}
		})
	}
	wg.Wait()

	var draw []keyCheck
	for _, kc := range checks {
		ex.Results = append(ex.Results, kc.KeyResult)
		if kc.info != nil && len(draw) < opt.MaxHTML {
			draw = append(draw, kc)
		}
	}
	return ex, draw
}
