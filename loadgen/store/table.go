package store

// paymentTable is an open-addressing hash table of the payments a shard
// tracks, keyed by payment id, with linear probing and backward-shift
// deletion: removing leaves no tombstone, so a table whose payments come
// and go (every payment of a run passes through it) stays as large as the
// most it held at once. (A Go map would also serve, at the cost of a
// pointer-rich bucket array and a hash call per lookup.) Pointers it
// returns are valid until the next add or remove.
type paymentTable struct {
	slots []paymentState
	used  []bool // used[i]: slots[i] holds a payment
	n     int
}

// minTableSize is a table's first size: 64 slots.
const minTableSize = 64

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
	for i := t.home(id); t.used[i]; i = (i + 1) & mask {
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
	for t.used[i] {
		i = (i + 1) & mask
	}
	t.used[i] = true
	t.slots[i] = paymentState{id: id, account: a}
	t.n++
	return &t.slots[i]
}

// grow doubles the table (to minTableSize at first) and puts every
// payment back.
func (t *paymentTable) grow() {
	old, oldUsed := t.slots, t.used
	size := max(minTableSize, 2*len(old))
	t.slots, t.used = make([]paymentState, size), make([]bool, size)
	mask := size - 1
	for j := range old {
		if !oldUsed[j] {
			continue
		}
		i := t.home(old[j].id)
		for t.used[i] {
			i = (i + 1) & mask
		}
		t.used[i], t.slots[i] = true, old[j]
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
	for ; t.used[i]; i = (i + 1) & mask {
		if t.slots[i].id == id {
			break
		}
	}
	if !t.used[i] {
		return
	}
	t.n--
	hole := i
	for j := (i + 1) & mask; t.used[j]; j = (j + 1) & mask {
		// Slot j may move to the hole if its home is not in (hole, j]
		// cyclically: its probe sequence passes the hole.
		h := t.home(t.slots[j].id)
		if (j-h)&mask >= (j-hole)&mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.used[hole] = false
	t.slots[hole] = paymentState{}
}

// each calls f with every payment in the table.
func (t *paymentTable) each(f func(*paymentState)) {
	for i := range t.slots {
		if t.used[i] {
			f(&t.slots[i])
		}
	}
}
