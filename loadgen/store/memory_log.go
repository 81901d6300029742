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
// It walks the current version and base down to their common ancestor,
// stepping the larger (parents are smaller versions), through the log's
// prev links (see Record versions in the package doc). When the lock
// works, base is the current version and nothing is walked.
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
