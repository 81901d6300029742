package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies"
)

// The sequenced store's sequence page (store.SeqPage, docs/seq-store.md)
// reaches a local instance process as its fd 3, which envSeqFD names. See
// "Store transports" in the package doc.
const (
	envSeqFD = "LOCKBENCH_SEQ_FD"
	// seqFD is the page's descriptor in a child: its first ExtraFiles.
	seqFD = 3
)

// The store transports of local instance processes (Options.StoreTransport,
// --store-transport).
const (
	// TransportSync: every Enter and Finish is a call the holder waits
	// for, two round trips to the coordinator a critical section.
	TransportSync = "sync"
	// TransportSequenced: Enters and Finishes are one-way, numbered from a
	// page shared with the coordinator, which applies them in that order
	// and computes each write from the read it applied (docs/seq-store.md);
	// on agents, Enters are one-way and applied on arrival, and Finishes
	// are answered once applied.
	TransportSequenced = "sequenced"
)

// checkTransport refuses a store transport o cannot have: an unknown one,
// and the sequenced one without instance processes (in-process instances
// call the store directly).
func checkTransport(o Options) error {
	switch o.StoreTransport {
	case "", TransportSync:
		return nil
	case TransportSequenced:
		if o.Scenario.InstanceMode != InstanceProcess {
			return usageErr("store-transport", "sequenced needs instance processes; want --instance-mode process, or --agents")
		}
		return nil
	}
	return usageErr("store-transport", "want %s or %s, got %q", TransportSync, TransportSequenced, o.StoreTransport)
}

// storeTransport decides, once, the store transport of a run of sc with
// a strategy of info that asked for asked: "" for in-process instances,
// which call the store directly; TransportSequenced when asked for (or,
// for local instance processes, by default: asked "", local) and nothing
// keeps the run off it; else TransportSync, with why (not "") when the
// run asked for the sequenced store and sequencedBar keeps it sync.
func storeTransport(sc Scenario, info strategies.Info, asked string, local, holdsEnters bool) (used, why string) {
	if sc.InstanceMode != InstanceProcess {
		return "", ""
	}
	if asked == "" && local {
		if sequencedBar(sc, info, holdsEnters) != "" {
			return TransportSync, "" // the default, not asked for: no word
		}
		return TransportSequenced, ""
	}
	if asked != TransportSequenced {
		return TransportSync, ""
	}
	if why := sequencedBar(sc, info, holdsEnters); why != "" {
		return TransportSync, why
	}
	return TransportSequenced, ""
}

// sequencedBar is what keeps a run of sc with a strategy of info, which
// asked for the sequenced store, on the synchronous one ("" for nothing):
// the sequenced store serves the memory store and a critical section of
// one Enter and one Finish (worker.critical's), with fault hooks that do
// not hold a holder inside its Enter (FaultEnv.HoldsEnters).
func sequencedBar(sc Scenario, info strategies.Info, holdsEnters bool) string {
	switch {
	case info.Transactional:
		return "its deliveries are transactions on the Postgres store"
	case sc.Store != StoreMemory:
		return "the store is " + string(sc.Store) + ", not memory"
	case info.Redelivers:
		return "its deliveries process redelivered messages"
	case holdsEnters:
		return "the fault holds holders inside their Enter"
	}
	return ""
}

// seqStore is a run's sequenced store: the page and the sequencer for
// local instance processes; for instances on agents, neither, only the
// sync flag the coordinator's Finish answers carry (arrive).
type seqStore struct {
	page   *store.SeqPage
	seq    *store.Sequencer
	arrive *atomic.Bool
}

// newArriveStore is the sequenced store of a run on agents.
func newArriveStore() *seqStore { return &seqStore{arrive: new(atomic.Bool)} }

// setSync turns the sync flag (FaultEnv.syncWith).
func (s *seqStore) setSync(on bool) {
	if s.arrive != nil {
		s.arrive.Store(on)
		return
	}
	s.page.SetSync(on)
}

// newSeqStore makes a run's page and a sequencer applying to st, for
// instances processes (one connection each).
func newSeqStore(st store.Accessor, instances int) (*seqStore, error) {
	p, err := store.NewSeqPage()
	if err != nil {
		return nil, err
	}
	q := store.NewSequencer(st)
	q.Expect(instances)
	q.Bound(seqPendingBound)
	return &seqStore{page: p, seq: q}, nil
}

// seqPendingBound is the sequencer's bound on the events waiting behind a
// missing number (store.Sequencer.Bound); a variable for the tests.
var seqPendingBound = store.DefaultPendingBound

// watchFailure cancels the load (cancel) once the sequencer has failed:
// what is left of the run cannot be judged, and settle says why. It
// returns when done is.
func (s *seqStore) watchFailure(done <-chan struct{}, cancel func()) {
	if s == nil || s.seq == nil {
		return
	}
	go func() {
		select {
		case <-s.seq.Failed():
			cancel()
		case <-done:
		}
	}()
}

// settleTimeout bounds settle: 10 seconds. The instances have stopped by
// then, so all that is left is reading and applying what they sent.
const settleTimeout = 10 * time.Second

// settle waits until everything the instances sent is applied (they must
// have stopped). A nil seqStore has nothing to wait for.
func (s *seqStore) settle(ctx context.Context) error {
	if s == nil || s.seq == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	err := s.seq.Settle(ctx)
	switch {
	case errors.Is(err, store.ErrSeqOverflow):
		return fmt.Errorf("%w; the sync store transport has no such bound", err)
	case err != nil:
		return fmt.Errorf("sequenced store: %w", err)
	}
	return nil
}

// SeqStats is what a run's sequenced store did (EventSequenced).
type SeqStats struct {
	// Applied is the events applied; Waited those of them that were
	// waiting Enters (while a trap was armed).
	Applied, Waited int64
	// Gaps is the numbers skipped as never to be sent (taken by a
	// process that died before sending them). Each may have been an
	// event the store never judged, so they count in errors.store too.
	Gaps int64
	// Errors is the one-way events the store refused (in errors.store).
	Errors int64
}

func (s *seqStore) stats() SeqStats {
	if s.seq == nil {
		return SeqStats{} // applied as they arrived: nothing held back
	}
	return SeqStats{Applied: s.seq.Applied(), Waited: s.seq.Waited(), Gaps: s.seq.Gaps(), Errors: s.seq.Errors()}
}

// storeErrors is the run's store errors that no worker could count: the
// one-way events the store refused, and the gaps (numbers taken and never
// sent, each perhaps an event lost with its process). A run whose
// processes all lived has none of either.
func (s *seqStore) storeErrors() int64 {
	if s == nil || s.seq == nil {
		return 0
	}
	return s.seq.Errors() + s.seq.Gaps()
}

// close releases the coordinator's mapping of the page.
func (s *seqStore) close() {
	if s != nil && s.page != nil {
		_ = s.page.Close()
	}
}

// childSeqPage is the page an instance process was given, or nil if it
// was given none.
func childSeqPage() (*store.SeqPage, error) {
	if os.Getenv(envSeqFD) != fmt.Sprint(seqFD) {
		return nil, nil
	}
	return store.OpenSeqPage(os.NewFile(seqFD, "lockbench-seq"))
}
