package check

import (
	"cmp"
	"fmt"
	"slices"
)

// The refusals of a write, as the history names them.
const (
	refusedStale     = "stale"
	refusedRegressed = "token_regressed"
	refusedReused    = "token_reused"
)

// WriteMismatch is a write whose applied and refused in the history are
// not what the rules derive: a disagreement on the pseudo-field applied.
type WriteMismatch struct {
	Key string
	Seq int64
	// History and Rules are what the history says and what the rules
	// derive: "applied", or "refused (REASON)".
	History, Rules string
}

// app is one application of a payment: an applied write, or a committed
// claimed tx.
type app struct {
	p, at int64
	// version, base, debit and balance are the write's; version is 0 for
	// a tx, and for a write the history did not record as applied.
	version, base, debit, balance int64
	a                             int32
	// onChain: the application is held by its account's final record.
	onChain bool
}

// keyState is the judging state of one lock key (docs/history.md,
// "Deriving the counts"). Entry numbers are compared as serial numbers
// modulo 2³².
type keyState struct {
	entries               int64
	hasEntries            bool
	inside                []int64 // the entry numbers inside
	maxToken, lastApplied int64
	windowStart           int64
	overlaps, overlapNs   int64
	overlapMaxNs          int64
	staleAccepted         []int64 // the at of each stale write accepted
}

// serialAfter reports whether entry number a comes after b, modulo 2³²
// (RFC 1982 serial numbers: the memory store's counter wraps).
func serialAfter(a, b int64) bool {
	return int32(uint32(a)-uint32(b)) > 0
}

// judgeKey runs the rules over one key's store events in seq order,
// adding to c the counts the key owns and returning its applications
// and the writes the history records otherwise than the rules derive.
func judgeKey(key string, kd *keyData, hdr *header, c *Counts) (*keyState, []app, []WriteMismatch, error) {
	evs := kd.events
	slices.SortFunc(evs, func(x, y storeEvent) int { return cmp.Compare(x.seq, y.seq) })
	for j := 1; j < len(evs); j++ {
		if evs[j].seq == evs[j-1].seq {
			return nil, nil, nil, fmt.Errorf("%w: key %s: seq %d twice", errFormat, key, evs[j].seq)
		}
	}
	ks := &keyState{}
	var apps []app
	var bad []WriteMismatch
	for j := range evs {
		e := &evs[j]
		if !e.finish {
			ks.enter(e)
			continue
		}
		if e.hasWrite {
			applied, reason := ks.judge(e, hdr, c)
			if m, ok := mismatch(key, e, applied, reason); ok {
				bad = append(bad, m)
			}
			if applied {
				a := app{p: e.p, at: e.at, base: e.wr.Base, debit: e.wr.Debit, balance: e.wr.Balance, a: e.a}
				if e.wr.Applied {
					a.version = e.wr.Version
				}
				apps = append(apps, a)
			}
		}
		ks.leave(e)
	}
	c.Overlaps += ks.overlaps
	c.OverlapNs += ks.overlapNs
	c.OverlapMaxNs = max(c.OverlapMaxNs, ks.overlapMaxNs)
	return ks, apps, bad, nil
}

// enter takes an enter: an overlap when a holder is inside already, and
// a window of exposure opens when the holders inside go from 1 to 2.
func (ks *keyState) enter(e *storeEvent) {
	if len(ks.inside) > 0 {
		ks.overlaps++
	}
	ks.inside = append(ks.inside, e.n)
	if len(ks.inside) == 2 {
		ks.windowStart = e.at
	}
	if !ks.hasEntries || serialAfter(e.n, ks.entries) {
		ks.entries, ks.hasEntries = e.n, true
	}
	ks.maxToken = max(ks.maxToken, e.token)
}

// leave takes a finish's leaving: the window of exposure closes when
// the holders inside go from 2 to 1. A finish of an entry not inside
// changes nothing.
func (ks *keyState) leave(e *storeEvent) {
	j := slices.Index(ks.inside, e.n)
	if j < 0 {
		return
	}
	ks.inside = slices.Delete(ks.inside, j, j+1)
	if len(ks.inside) == 1 {
		d := max(e.at-ks.windowStart, 0)
		ks.overlapNs += d
		ks.overlapMaxNs = max(ks.overlapMaxNs, d)
	}
}

// judge judges the write of finish e, counting it in at most one of the
// stale and token counts, and returns whether it is applied and, when
// refused, why.
func (ks *keyState) judge(e *storeEvent, hdr *header, c *Counts) (applied bool, reason string) {
	superseded := ks.hasEntries && serialAfter(ks.entries, e.n)
	older := e.token > 0 && e.token < ks.maxToken
	reused := e.token > 0 && e.token <= ks.lastApplied
	refused := hdr.fencing && (older || hdr.strict && reused)
	switch {
	case superseded:
		reason = refusedStale
		if refused {
			c.StaleRejected++
		} else {
			c.StaleAccepted++
			ks.staleAccepted = append(ks.staleAccepted, e.at)
		}
	case older:
		reason = refusedRegressed
		c.TokenRegressed++
	case reused:
		reason = refusedReused
		c.TokenReused++
	}
	if refused {
		return false, reason
	}
	ks.maxToken = max(ks.maxToken, e.token)
	ks.lastApplied = max(ks.lastApplied, e.token)
	return true, ""
}

// mismatch compares the write of e as the history records it with the
// rules' verdict.
func mismatch(key string, e *storeEvent, applied bool, reason string) (WriteMismatch, bool) {
	rules := "applied"
	if !applied {
		rules = "refused (" + reason + ")"
	}
	hist := "applied"
	if !e.wr.Applied || e.wr.Refused != "" {
		hist = "refused (" + e.wr.Refused + ")"
		if e.wr.Applied {
			hist = "applied and refused (" + e.wr.Refused + ")"
		}
	}
	if hist == rules {
		return WriteMismatch{}, false
	}
	return WriteMismatch{Key: key, Seq: e.seq, History: hist, Rules: rules}, true
}
