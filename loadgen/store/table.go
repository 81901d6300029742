package store

// paymentTable is an open-addressing hash table of the payments a shard
// tracks, keyed by payment id, with linear probing and backward-shift
// deletion, so it leaves no tombstones (see The Memory store in the
// package doc). A slot holds a payment while its paymentState's used flag
// is set. Pointers it returns are valid until the next add or remove.
type paymentTable struct {
	slots []paymentState
	n     int
}

// minTableSize is a table's first size: 4 slots. A shard rarely holds
// more payments than that at once, and each slot is a cache line: a small
// table keeps its lines warm (package doc). A table that needs more grows.
const minTableSize = 4

// home is where id's probe sequence starts: a Fibonacci hash of id.
func (t *paymentTable) home(id int64) int {
	return int((uint64(id) * 0x9E3779B97F4A7C15) >> 32 & uint64(len(t.slots)-1))
}

// get returns the state of payment id, or nil.
func (t *paymentTable) get(id int64) *paymentState {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(id); t.slots[i].used; i = (i + 1) & mask {
		if t.slots[i].id == id {
			return &t.slots[i]
		}
	}
	return nil
}

// add returns the state of payment id of account a, a zero one if the
// table did not have it.
func (t *paymentTable) add(id int64, a int32) *paymentState {
	if ps := t.get(id); ps != nil {
		return ps
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i].used {
		i = (i + 1) & mask
	}
	t.slots[i] = paymentState{id: id, account: a, used: true}
	t.n++
	return &t.slots[i]
}

// grow doubles the table (to minTableSize at first) and puts every
// payment back.
func (t *paymentTable) grow() {
	old := t.slots
	size := max(minTableSize, 2*len(old))
	t.slots = make([]paymentState, size)
	mask := size - 1
	for j := range old {
		if !old[j].used {
			continue
		}
		i := t.home(old[j].id)
		for t.slots[i].used {
			i = (i + 1) & mask
		}
		t.slots[i] = old[j]
	}
}

// remove forgets payment id, if the table has it. The slots after it in
// its run move back into the hole when their home allows (backward-shift
// deletion), so lookups never need a tombstone.
func (t *paymentTable) remove(id int64) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for ; t.slots[i].used; i = (i + 1) & mask {
		if t.slots[i].id == id {
			break
		}
	}
	if !t.slots[i].used {
		return
	}
	t.n--
	hole := i
	for j := (i + 1) & mask; t.slots[j].used; j = (j + 1) & mask {
		// Slot j may move to the hole if its home is not in (hole, j]
		// cyclically: its probe sequence passes the hole.
		h := t.home(t.slots[j].id)
		if (j-h)&mask >= (j-hole)&mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.slots[hole] = paymentState{}
}

// each calls f with every payment in the table.
func (t *paymentTable) each(f func(*paymentState)) {
	for i := range t.slots {
		if t.slots[i].used {
			f(&t.slots[i])
		}
	}
}
