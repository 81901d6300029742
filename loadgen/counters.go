package loadgen

import (
	"sync/atomic"
)

// Delivery is one delivery of a payment to one instance.
type Delivery struct {
	Payment int64
	Account int32
	Amount  int64
	// IntendedNs is when the payment was meant to start (open loop), in
	// Unix nanoseconds: latency counts from it. 0 in a closed loop, where
	// a payment starts when a worker takes it, and latency counts from
	// then.
	IntendedNs int64
	// Record is false during the warmup.
	Record bool
	// Worker is the instance's worker that takes the delivery, or -1 for
	// whichever is free (see Target).
	Worker int32
}

// Counters are one worker's (or one instance's) counts. Workers update
// their own with atomics so progress can read them without stopping anyone.
type Counters struct {
	// The three a lock cycle adds to first, together (see worker).
	Deliveries atomic.Int64 // deliveries handled (acquired or not)
	Acquired   atomic.Int64
	// Measured counts lock cycles completed outside the warmup.
	Measured    atomic.Int64
	NotAcquired atomic.Int64
	// Redeliveries counts messages a broker strategy (queue) delivered
	// again after another consumer's ack deadline passed.
	Redeliveries atomic.Int64
	// Conflicts counts the failed version checks of an optimistic
	// transactional strategy (pg-optimistic), each tried again.
	Conflicts atomic.Int64
	Errors    [numErrClasses]atomic.Int64
}

// Snapshot is a plain copy of Counters, for sending and summing.
type Snapshot struct {
	Deliveries, Acquired, NotAcquired, Measured int64
	Redeliveries, Conflicts                     int64
	Errors                                      [numErrClasses]int64
}

// Snapshot copies c.
func (c *Counters) Snapshot() Snapshot {
	s := Snapshot{Deliveries: c.Deliveries.Load(), Acquired: c.Acquired.Load(), NotAcquired: c.NotAcquired.Load(), Measured: c.Measured.Load(), Redeliveries: c.Redeliveries.Load(), Conflicts: c.Conflicts.Load()}
	for i := range s.Errors {
		s.Errors[i] = c.Errors[i].Load()
	}
	return s
}

// Add adds o to s.
func (s *Snapshot) Add(o Snapshot) {
	s.Deliveries += o.Deliveries
	s.Acquired += o.Acquired
	s.NotAcquired += o.NotAcquired
	s.Measured += o.Measured
	s.Redeliveries += o.Redeliveries
	s.Conflicts += o.Conflicts
	for i := range s.Errors {
		s.Errors[i] += o.Errors[i]
	}
}

// ErrorMap returns the non-zero error classes by name.
func (s Snapshot) ErrorMap() map[string]int64 {
	m := map[string]int64{}
	for i, n := range s.Errors {
		if n > 0 {
			m[errClasses[i]] = n
		}
	}
	return m
}
