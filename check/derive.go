package check

import (
	"fmt"
	"slices"
)

// derivation is what the rules derive from one history.
type derivation struct {
	counts Counts
	// hi, when the history has transactions of unknown outcome, is what
	// the counts come to if every one of them committed: the row's count
	// must lie between counts and hi.
	hi *Counts
	// overlapKeys are the keys where the store counted an overlap.
	overlapKeys map[string]bool
	// writes are the writes recorded otherwise than the rules derive.
	writes []WriteMismatch
	notes  []string
	// underived are the counts this kind of history does not derive
	// (not_acquired outside lock runs): not compared.
	underived map[string]bool
	// errs are the errors by class the acquire and release lines carry
	// (lock runs), and kind the history's kind.
	errs map[string]int64
	kind string
}

// derive applies the rules of docs/history.md to h.
func derive(h *history) (*derivation, error) {
	d := &derivation{overlapKeys: map[string]bool{}, underived: map[string]bool{}, errs: h.errs, kind: h.hdr.kind}
	keys := make([]string, 0, len(h.keys))
	for k := range h.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var apps []app
	var outcomes []int64
	for _, k := range keys {
		ks, a, bad, err := judgeKey(k, h.keys[k], &h.hdr, &d.counts)
		if err != nil {
			return nil, err
		}
		if ks.overlaps > 0 {
			d.overlapKeys[k] = true
		}
		apps = append(apps, a...)
		outcomes = append(outcomes, ks.staleAccepted...)
		d.writes = append(d.writes, bad...)
	}
	for _, t := range h.tx {
		apps = append(apps, app{p: t.p, at: t.end, a: t.a})
	}
	offered := h.offers
	if h.payments != nil {
		offered = *h.payments
	}
	var hi Counts
	if len(h.maybeTx) > 0 {
		// Every transaction of unknown outcome committed: the other end
		// of the range.
		hi = d.counts
		all := slices.Clone(apps)
		for _, t := range h.maybeTx {
			all = append(all, app{p: t.p, at: t.end, a: t.a})
		}
		moreHi, _ := judgeRecords(&h.hdr, all, offered, &hi)
		hi.UnsafeStrikes = unsafeStrikes(h.strikes, append(slices.Clone(outcomes), moreHi...))
		hi.StrikesMissed = missedStrikes(h.strikes, append(slices.Clone(outcomes), moreHi...), h.asks)
		hi.Conflicts = h.conflicts
		d.hi = &hi
	}
	more, notes := judgeRecords(&h.hdr, apps, offered, &d.counts)
	d.notes = notes
	d.counts.Payments, d.counts.Strikes = offered, int64(len(h.strikes))
	if h.hdr.kind == "lock" {
		d.counts.NotAcquired = h.notAcquired
	} else {
		d.underived["not_acquired"] = true
	}
	if d.hi != nil {
		d.hi.Payments, d.hi.Strikes, d.hi.NotAcquired = d.counts.Payments, d.counts.Strikes, d.counts.NotAcquired
	}
	d.counts.UnsafeStrikes = unsafeStrikes(h.strikes, append(outcomes, more...))
	d.counts.StrikesMissed = missedStrikes(h.strikes, append(outcomes, more...), h.asks)
	d.counts.Conflicts = h.conflicts
	if d.hi != nil {
		d.notes = append(d.notes, fmt.Sprintf("%d transactions of unknown outcome (their COMMIT failed on the way): each count is compared with its range, from none of them committed to all", len(h.maybeTx)))
	}
	return d, nil
}
