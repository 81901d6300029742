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

// consistency lists where the history contradicts itself
// (docs/history.md, "A history agrees with itself"): it has no end line;
// a key's entry numbers skip or repeat one; in a lock run, an enter that
// follows no ok acquire of its key by the same worker, or whose
// processed is not what the finishes before it wrote.
func consistency(h *history) []string {
	var out []string
	more := 0
	add := func(format string, args ...any) {
		if len(out) < maxViolations {
			out = append(out, fmt.Sprintf(format, args...))
		} else {
			more++
		}
	}
	if !h.ended {
		add("no end line: the history was cut short")
	}
	keys := make([]string, 0, len(h.keys))
	for k := range h.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type keyed struct {
		e *storeEvent
		k string
	}
	var enters []keyed
	for _, k := range keys {
		var ns []int64
		for i := range h.keys[k].events {
			e := &h.keys[k].events[i]
			if !e.finish {
				ns = append(ns, e.n)
				enters = append(enters, keyed{e, k})
			}
		}
		slices.Sort(ns)
		for j, n := range ns {
			if want := int64(j + 1); uint32(n) != uint32(want) {
				what := "skips"
				if j > 0 && n == ns[j-1] {
					what = "repeats"
				}
				add("key %s: its entry numbers %s %d (enter %d of %d)", k, what, want, j+1, len(ns))
				break
			}
		}
	}
	if h.hdr.kind != "lock" {
		return tail(out, more)
	}
	for _, ke := range enters {
		e := ke.e
		first, ok := h.granted[holderKey{e.i, e.w, ke.k}]
		if !ok || first > e.at+h.hdr.uncertainty[e.i] {
			add("line %d: enter of payment %d on key %s by instance %d worker %d follows no ok acquire of that key by that worker", e.line, e.p, ke.k, e.i, e.w)
		}
	}
	// What an enter read as processed is whether its payment is on the
	// chain of the account record it read (its version, down by the
	// writes' bases to the opening record 0): a write computed from an
	// older read drops the payments of the versions it skipped.
	type made struct{ base, p int64 }
	versions := map[int32]map[int64]made{}
	for _, k := range keys {
		for _, e := range h.keys[k].events {
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
		for v := e.version; v > 0 && budget > 0; budget-- {
			m, ok := versions[e.a][v]
			if !ok || m.base >= v {
				break // a version no applied write made: its chain is unknown
			}
			if m.p == e.p {
				on = true
				break
			}
			v = m.base
		}
		if budget <= 0 {
			add("processed reads not all checked: the account chains are longer than %d steps in all", maxChainSteps)
			break
		}
		if e.processed != on {
			add("line %d: enter of payment %d read processed %v at account %d's version %d, whose chain says %v", e.line, e.p, e.processed, e.a, e.version, on)
		}
	}
	return tail(out, more)
}

func tail(out []string, more int) []string {
	if more > 0 {
		out = append(out, fmt.Sprintf("… and %d more", more))
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
