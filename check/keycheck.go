package check

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// KeyOutcome is what the exclusion check found on one key.
type KeyOutcome string

// The outcomes of a key.
const (
	// KeyOK: every operation checked, and an order explains them.
	KeyOK KeyOutcome = "ok"
	// KeyViolated: no order explains the operations; two workers held
	// the key at once.
	KeyViolated KeyOutcome = "violated"
	// KeyUnknown: porcupine ran out of time on a part of the key, and
	// found no violation elsewhere.
	KeyUnknown KeyOutcome = "unknown"
	// KeyPartial: the operations checked are explained, but some were
	// not checked (Cut says why).
	KeyPartial KeyOutcome = "partial"
)

// KeyResult is the exclusion check of one lock key.
type KeyResult struct {
	Key     string
	Outcome KeyOutcome
	// StoreOverlap: the store counted an overlap on the key.
	StoreOverlap bool
	// Ops is the key's operations, Checked those porcupine checked.
	Ops, Checked int
	// Cut names the limit that left operations unchecked: the option's
	// flag (FlagMaxOpsPerKey, FlagKeyTimeout, FlagTimeout); "" when none.
	Cut string
}

// keyCheck is one key's check: its result, and for a violated key the
// chunk porcupine found violated, for the visualisation.
type keyCheck struct {
	KeyResult
	model porcupine.Model
	info  *porcupine.LinearizationInfo
	// span is the time the violated chunk covers.
	span [2]int64
}

// keyOps turns a key's lock operations into porcupine's, sorted by call:
// each interval widened by its process's clock uncertainty, each worker
// a client numbered from 0 in (instance, worker) order. It returns the
// clients' names.
func keyOps(ops []lockOp, uncertainty map[int32]int64) ([]porcupine.Operation, []string) {
	type worker struct{ i, w int32 }
	ids := map[worker]int{}
	for _, o := range ops {
		ids[worker{o.i, o.w}] = 0
	}
	ws := make([]worker, 0, len(ids))
	for w := range ids {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(x, y worker) int { return cmp.Or(cmp.Compare(x.i, y.i), cmp.Compare(x.w, y.w)) })
	names := make([]string, len(ws))
	for c, w := range ws {
		ids[w] = c
		names[c] = clientName(w.i, w.w)
	}
	out := make([]porcupine.Operation, len(ops))
	for j, o := range ops {
		u := uncertainty[o.i]
		c := ids[worker{o.i, o.w}]
		out[j] = porcupine.Operation{
			ClientId: c,
			Input:    lockInput{client: c, release: o.release},
			Call:     o.inv - u,
			Return:   max(o.ret, o.inv) + u,
		}
	}
	slices.SortFunc(out, func(x, y porcupine.Operation) int {
		return cmp.Or(cmp.Compare(x.Call, y.Call), cmp.Compare(x.Return, y.Return))
	})
	return out, names
}

// chunkOps is how many operations the chunks of a key hold at most when
// they can be cut that small: 1,000. The search backtracks within a chunk
// only, so small chunks find a violation sooner, and the visualisation
// of a violated chunk shows where it happened.
const chunkOps = 1000

// chunks cuts ops (sorted by call) where no operation is in flight: every
// operation before a cut returned before every one after it was called,
// so any order of the whole puts the part before a cut first. A chunk
// holds as many whole parts as fit in size; a longer part is a chunk of
// its own.
func chunks(ops []porcupine.Operation, size int) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	start, cut := 0, 0 // the chunk under way, and its last cut
	// part ends the part that began at cut: at j, a cut or the end.
	part := func(j int) {
		if j-start > size && cut > start {
			out = append(out, ops[start:cut])
			start = cut
		}
		if j-start > size {
			out = append(out, ops[start:j])
			start = j
		}
		cut = j
	}
	var latest int64 // the latest return so far
	for j, o := range ops {
		if j > 0 && latest < o.Call {
			part(j)
		}
		latest = max(latest, o.Return)
	}
	part(len(ops))
	if start < len(ops) {
		out = append(out, ops[start:])
	}
	return out
}

// after returns the key's state after ops from state s, from the counts
// of acquires and releases alone: in any legal order each client's
// acquires exceed its releases by 0 or 1, and by 1 for one client at
// most, the holder. ok is false when the counts allow no legal order.
func after(s int, ops []porcupine.Operation) (int, bool) {
	net := map[int]int{}
	if s != free {
		net[s] = 1
	}
	for _, o := range ops {
		in := o.Input.(lockInput)
		if in.release {
			net[in.client]--
		} else {
			net[in.client]++
		}
	}
	next := free
	for c, n := range net {
		switch {
		case n == 0:
		case n == 1 && next == free:
			next = c
		default:
			return 0, false
		}
	}
	return next, true
}

// checkKey checks one key's operations chunk by chunk, each chunk from
// the state the one before left, within the key's budget and the run's
// deadline.
func checkKey(ctx context.Context, key string, ops []porcupine.Operation, names []string, opt *Options, deadline time.Time) keyCheck {
	kc := keyCheck{KeyResult: KeyResult{Key: key, Outcome: KeyOK, Ops: len(ops)}}
	keyEnd := time.Now().Add(opt.KeyTimeout)
	state := free
	for _, ch := range chunks(ops, min(chunkOps, opt.MaxOpsPerKey)) {
		// The budget is the key's or the run's, whichever ends first.
		budget, limit := time.Until(keyEnd), FlagKeyTimeout
		if left := time.Until(deadline); left < budget {
			budget, limit = left, FlagTimeout
		}
		switch {
		case ctx.Err() != nil:
			kc.cut(FlagTimeout)
		case len(ch) > opt.MaxOpsPerKey:
			kc.cut(FlagMaxOpsPerKey)
		case budget <= 0:
			kc.cut(limit)
		default:
			m := lockModel(state, names)
			res, info := porcupine.CheckOperationsVerbose(m, ch, budget)
			switch res {
			case porcupine.Illegal:
				kc.Checked += len(ch)
				kc.Outcome, kc.model, kc.info = KeyViolated, m, &info
				kc.span = [2]int64{ch[0].Call, reach(ch)}
				return kc
			case porcupine.Unknown:
				kc.Outcome = KeyUnknown
				kc.Cut = cmp.Or(kc.Cut, limit)
			default:
				kc.Checked += len(ch)
			}
		}
		next, ok := after(state, ch)
		if !ok {
			kc.Outcome = KeyViolated
			return kc
		}
		state = next
	}
	return kc
}

// cut marks part of the key unchecked for the limit flag.
func (kc *keyCheck) cut(flag string) {
	if kc.Outcome == KeyOK {
		kc.Outcome = KeyPartial
	}
	kc.Cut = cmp.Or(kc.Cut, flag)
}

// reach is the latest return of ops.
func reach(ops []porcupine.Operation) int64 {
	var r int64
	for _, o := range ops {
		r = max(r, o.Return)
	}
	return r
}
