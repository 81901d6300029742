package check

import (
	"cmp"
	"fmt"
	"slices"
)

// The modes of a run (the header's mode).
const (
	modeAccount = "account"
	modePayment = "payment"
)

// judgeRecords derives the counts of the applications apps (processed,
// duplicates, lost, lost_updates, overdrafts) and unprocessed from the
// offers, and returns the times of the unsafe outcomes they hold
// (docs/history.md, "Applications", "The account record", "unsafe_strikes")
// and notes on what the records could not hold.
func judgeRecords(hdr *header, apps []app, offers int64, c *Counts) (outcomes []int64, notes []string) {
	byAcct := map[int32][]int{}
	for j := range apps {
		apps[j].onChain = true
		if apps[j].version > 0 {
			byAcct[apps[j].a] = append(byAcct[apps[j].a], j)
		}
	}
	accts := make([]int32, 0, len(byAcct))
	for a := range byAcct {
		accts = append(accts, a)
	}
	slices.Sort(accts)
	// dropped holds, for each application off its account's final chain,
	// the at of the write whose record dropped it.
	dropped := map[int]int64{}
	for _, a := range accts {
		idx := byAcct[a]
		slices.SortFunc(idx, func(x, y int) int {
			return cmp.Or(cmp.Compare(apps[x].version, apps[y].version), cmp.Compare(apps[x].at, apps[y].at))
		})
		for j := 1; j < len(idx); j++ {
			if apps[idx[j]].version == apps[idx[j-1]].version {
				notes = append(notes, fmt.Sprintf("account %d: version %d written twice", a, apps[idx[j]].version))
			}
		}
		if hdr.mode == modeAccount {
			chain(apps, idx, dropped)
		}
		if t, ok := overdraft(hdr, a, apps, idx); ok {
			c.Overdrafts++
			outcomes = append(outcomes, t)
		}
	}
	for j := range apps {
		if !apps[j].onChain && apps[j].debit > 0 {
			c.LostUpdates++
		}
	}
	outcomes = append(outcomes, c.countPayments(apps, dropped)...)
	c.Unprocessed = max(offers-c.Processed, 0)
	return outcomes, notes
}

// chain marks the applications of one account (idx, in version order)
// that are not on the chain of parents from its final record, and notes
// in dropped when each was dropped: at the first later write computed
// from a version before it (any write between held it, since its record
// descends from a version at or after it).
func chain(apps []app, idx []int, dropped map[int]int64) {
	at := func(v int64) (int, bool) {
		return slices.BinarySearchFunc(idx, v, func(j int, v int64) int { return cmp.Compare(apps[j].version, v) })
	}
	for _, j := range idx {
		apps[j].onChain = false
	}
	v := apps[idx[len(idx)-1]].version
	for v > 0 {
		k, ok := at(v)
		if !ok {
			break
		}
		apps[idx[k]].onChain = true
		if apps[idx[k]].base >= v {
			break
		}
		v = apps[idx[k]].base
	}
	for k, j := range idx {
		if apps[j].onChain {
			continue
		}
		for _, x := range idx[k+1:] {
			if apps[x].version > apps[j].version && apps[x].base < apps[j].version {
				dropped[j] = apps[x].at
				break
			}
		}
	}
}

// overdraft returns the at of the write that first took account a below
// 0, in version order: by the write's balance in account mode, by the
// running balance in payment mode.
func overdraft(hdr *header, a int32, apps []app, idx []int) (int64, bool) {
	var bal int64
	if int(a) < len(hdr.balances) && a >= 0 {
		bal = hdr.balances[a]
	}
	for _, j := range idx {
		if hdr.mode == modePayment {
			bal -= apps[j].debit
		} else {
			bal = apps[j].balance
		}
		if bal < 0 {
			return apps[j].at, true
		}
	}
	return 0, false
}

// countPayments counts processed, duplicates and lost over the payments
// of apps, and returns the times of their unsafe outcomes: every
// application of a payment after its first, and the dropping of an
// application that was lost or a lost update.
func (c *Counts) countPayments(apps []app, dropped map[int]int64) []int64 {
	order := make([]int, len(apps))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(apps[x].p, apps[y].p), cmp.Compare(apps[x].at, apps[y].at))
	})
	var outcomes []int64
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && apps[order[hi]].p == apps[order[lo]].p {
			hi++
		}
		c.Processed++
		c.Duplicates += int64(hi - lo - 1)
		lost := true
		for k, j := range order[lo:hi] {
			if k > 0 {
				outcomes = append(outcomes, apps[j].at)
			}
			lost = lost && !apps[j].onChain
		}
		if lost {
			c.Lost++
		}
		for _, j := range order[lo:hi] {
			if t, ok := dropped[j]; ok && (lost || apps[j].debit > 0) {
				outcomes = append(outcomes, t)
			}
		}
		lo = hi
	}
	return outcomes
}
