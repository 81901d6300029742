package loadgen

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies"
)

// The sequenced store (docs/seq-store.md), a prototype behind an opt-in:
// with envSeqStore=1, a process-mode run of local instances on the memory
// store shares a sequence page (store.SeqPage) with its instance
// processes, whose store clients send their Enters and Finishes one-way
// (store.Client.Sequence); the coordinator applies them in sequence order
// (store.Sequencer). The page reaches a child as its fd 3, which
// envSeqFD names.
const (
	envSeqStore = "LOCKBENCH_SEQ_STORE"
	envSeqFD    = "LOCKBENCH_SEQ_FD"
	// seqFD is the page's descriptor in a child: its first ExtraFiles.
	seqFD = 3
)

// seqStore is a run's sequenced store: the page and the sequencer.
type seqStore struct {
	page *store.SeqPage
	seq  *store.Sequencer
}

// wantSeqStore reports whether a run of sc with a strategy of info and
// spawner sp uses the sequenced store: only when opted into, for local
// instance processes (sp nil) on the memory store, and for strategies
// whose critical section is worker.critical's (not transactional ones,
// not the queue's redeliveries).
func wantSeqStore(sc Scenario, info strategies.Info, sp Spawner) bool {
	return os.Getenv(envSeqStore) == "1" && sc.InstanceMode == "process" && sp == nil &&
		sc.Store == "memory" && !info.Transactional && !info.Redelivers
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
	return &seqStore{page: p, seq: q}, nil
}

// settleTimeout bounds settle: 10 seconds. The instances have stopped by
// then, so all that is left is reading and applying what they sent.
const settleTimeout = 10 * time.Second

// settle waits until everything the instances sent is applied (they must
// have stopped). A nil seqStore has nothing to wait for.
func (s *seqStore) settle(ctx context.Context) error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if err := s.seq.Settle(ctx); err != nil {
		return fmt.Errorf("sequenced store: %w", err)
	}
	return nil
}

// SeqStats is what a run's sequenced store did (Options.Sequenced).
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
	return SeqStats{Applied: s.seq.Applied(), Waited: s.seq.Waited(), Gaps: s.seq.Gaps(), Errors: s.seq.Errors()}
}

// storeErrors is the run's store errors that no worker could count: the
// one-way events the store refused, and the gaps (numbers taken and never
// sent, each perhaps an event lost with its process). A run whose
// processes all lived has none of either.
func (s *seqStore) storeErrors() int64 {
	if s == nil {
		return 0
	}
	return s.seq.Errors() + s.seq.Gaps()
}

// close releases the coordinator's mapping of the page.
func (s *seqStore) close() {
	if s != nil {
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
