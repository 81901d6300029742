package store

// push adds v to the log, in a free entry if there is one, and returns
// where it is.
func (sh *shard) push(v recordVersion) int32 {
	if i := sh.free; i >= 0 {
		sh.free = sh.log[i].prev
		sh.log[i] = v
		return i
	}
	sh.log = append(sh.log, v)
	return int32(len(sh.log) - 1)
}

// rebase makes acc's record hold what version base holds, before a write
// computed from base lands on it; bi is where base is in the shard's log.
// Both versions' sets are their chains of parents down to the floor, so
// walking the current version and base down to their common ancestor
// (parents are smaller versions: step the larger) visits exactly the
// applications that leave the record (on the current version's side) and
// those that come back into it (on base's side: a write from a read older
// than an overwrite resurrects what it had read). When the lock works,
// base is the current version and nothing is walked.
//
// The versions are found in the shard's log by the links from each to the
// account's version before it: ci and bi are where versions cur and base
// are, and both only move down, never below the floor (every version in
// the log descends from it).
func (m *Memory) rebase(sh *shard, acc *account, base int64, bi int32) {
	cur, ci := acc.version, acc.last
	for cur != base {
		if cur > base {
			v := sh.log[ci]
			sh.payments.get(v.payment).inRecord--
			if v.debit {
				acc.inRecordDebits--
			}
			ci, _ = sh.down(ci, cur, v.parent)
			cur = v.parent
		} else {
			v := sh.log[bi]
			sh.payments.get(v.payment).inRecord++
			if v.debit {
				acc.inRecordDebits++
			}
			bi, _ = sh.down(bi, base, v.parent)
			base = v.parent
		}
	}
}

// down returns where in the log version to of an account is, given where
// its version from (≥ to) is; false when to is below the account's floor,
// whose versions the log no longer has.
func (sh *shard) down(i int32, from, to int64) (int32, bool) {
	for ; from > to; from-- {
		if i < 0 {
			return -1, false
		}
		i = sh.log[i].prev
	}
	return i, true
}
