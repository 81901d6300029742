package store

// Event is one of the store's events as a run's history records it
// (docs/history.md): an Enter, or a Finish with its write, as the store
// took it.
type Event struct {
	Finish bool
	Key    string
	// Instance and Worker are the holder's (an Enter's; a Finish's are
	// its Enter's, found by Key and Entry).
	Instance int32
	Worker   int32
	Payment  int64
	Account  int32
	// Seq orders the events of a lock key: increasing in the order the
	// store took them (unique within the key, with gaps allowed).
	Seq   int64
	Entry int64
	// AtNs is the store's time of the event, Unix ns.
	AtNs  int64
	Token int64

	// An Enter's read.
	Processed bool
	Balance   int64
	Version   int64

	// A Finish's write, when Wrote: what the holder sent (Base, Debit,
	// NewBalance) and what the store did (Applied and Made, the version
	// the write made; or Refused).
	Wrote      bool
	Applied    bool
	Base       int64
	Debit      int64
	NewBalance int64
	Made       int64
	Refused    Refusal
}

// Recorder receives a store's events for a run's history. Record must be
// quick, must not block on anything the store does, and must not call the
// store: Memory calls it with its lock on the event's key held (so a
// key's events arrive in Seq order), Postgres after the call's
// transaction (they may arrive out of order; Seq orders them). lane
// spreads the calls (Memory passes its shard): calls with one lane never
// run at once. ev is valid only during the call.
type Recorder interface {
	Record(lane int, ev *Event)
}

// Historian is a store that can record its events: SetRecorder makes it
// send every Enter and Finish to r from the next Reset on (nil: none).
type Historian interface {
	SetRecorder(r Recorder)
}

// Lanes is the most lanes a store's Record calls use.
const Lanes = memShards
