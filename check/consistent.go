package check

import (
	"fmt"
	"slices"
)

// maxViolations is the most self-contradictions reported per run: 10; a
// last line says how many more there are.
const maxViolations = 10

// maxChainSteps bounds the steps down account chains that checking the
// enters' processed reads may take in one run: 50 million.
const maxChainSteps = 50_000_000

// violations collects a run's self-contradictions, the first
// maxViolations of them.
type violations struct {
	lines []string
	more  int
}

func (v *violations) add(format string, args ...any) {
	if len(v.lines) < maxViolations {
		v.lines = append(v.lines, fmt.Sprintf(format, args...))
	} else {
		v.more++
	}
}

// keyedEnter is an enter with its lock key.
type keyedEnter struct {
	e *storeEvent
	k string
}

// consistency lists where the history contradicts itself
// (docs/history.md, "A history agrees with itself"): it has no end line;
// a key's entry numbers skip or repeat one; in a lock run, an enter that
// follows no ok acquire of its key by the same worker, or whose processed
// is not whether its payment is on the chain of the version it read.
func consistency(h *history) []string {
	var v violations
	if !h.ended {
		v.add("no end line: the history was cut short")
	}
	enters := checkEntryNumbers(h, &v)
	if h.hdr.kind == "lock" {
		checkAcquired(h, enters, &v)
		checkProcessed(h, enters, &v)
	}
	if v.more > 0 {
		v.lines = append(v.lines, fmt.Sprintf("… and %d more", v.more))
	}
	return v.lines
}

// checkEntryNumbers checks that each key's enters are numbered 1, 2, 3, …
// (modulo 2³², as the memory store's counter wraps) and returns every
// enter, key by key in order.
func checkEntryNumbers(h *history, v *violations) []keyedEnter {
	keys := make([]string, 0, len(h.keys))
	for k := range h.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var enters []keyedEnter
	for _, k := range keys {
		var ns []int64
		for i := range h.keys[k].events {
			if e := &h.keys[k].events[i]; !e.finish {
				ns = append(ns, e.n)
				enters = append(enters, keyedEnter{e, k})
			}
		}
		slices.Sort(ns)
		for j, n := range ns {
			if want := int64(j + 1); uint32(n) != uint32(want) {
				what := "skips"
				if j > 0 && n == ns[j-1] {
					what = "repeats"
				}
				v.add("key %s: its entry numbers %s %d (enter %d of %d)", k, what, want, j+1, len(ns))
				break
			}
		}
	}
	return enters
}

// checkAcquired checks that every enter comes after an ok acquire of its
// key by its worker (within the worker's clock uncertainty).
func checkAcquired(h *history, enters []keyedEnter, v *violations) {
	for _, ke := range enters {
		e := ke.e
		first, ok := h.granted[holderKey{e.i, e.w, ke.k}]
		if !ok || first > e.at+h.hdr.uncertainty[e.i] {
			v.add("line %d: enter of payment %d on key %s by instance %d worker %d follows no ok acquire of that key by that worker", e.line, e.p, ke.k, e.i, e.w)
		}
	}
}

// checkProcessed checks what each enter read as processed: whether its
// payment is on the chain of the account record it read (its version,
// down by the applied writes' bases to the opening record 0). A write
// computed from an older read drops the payments of the versions it
// skipped.
func checkProcessed(h *history, enters []keyedEnter, v *violations) {
	type made struct{ base, p int64 }
	versions := map[int32]map[int64]made{}
	for _, kd := range h.keys {
		for _, e := range kd.events {
			if e.finish && e.hasWrite && e.wr.Applied {
				if versions[e.a] == nil {
					versions[e.a] = map[int64]made{}
				}
				versions[e.a][e.wr.Version] = made{e.wr.Base, e.p}
			}
		}
	}
	budget := maxChainSteps
	for _, ke := range enters {
		e := ke.e
		on := false
		for ver := e.version; ver > 0 && budget > 0; budget-- {
			m, ok := versions[e.a][ver]
			if !ok || m.base >= ver {
				break // a version no applied write made: its chain is unknown
			}
			if m.p == e.p {
				on = true
				break
			}
			ver = m.base
		}
		if budget <= 0 {
			v.add("processed reads not all checked: the account chains are longer than %d steps in all", maxChainSteps)
			return
		}
		if e.processed != on {
			v.add("line %d: enter of payment %d read processed %v at account %d's version %d, whose chain says %v", e.line, e.p, e.processed, e.a, e.version, on)
		}
	}
}
