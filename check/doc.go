// Package check is lockbench's second judge: it reads the histories a
// run recorded (--history; docs/history.md) and derives every count of
// summary.json again from the operations alone, then checks mutual
// exclusion per lock key with porcupine
// (github.com/anishathalye/porcupine), and says where the history and
// the summary disagree.
//
// It is written from docs/history.md and shares no code with the store
// that judged the run: it imports neither loadgen nor loadgen/store (a
// test holds it to that), only results, for the run IDs that name the
// history files. A disagreement is a bug in one of the two judges or in
// the recording; it is never settled here.
//
// # Output
//
// Dir writes one line per run:
//
//	agree  ID
//	DISAGREE ID: FIELD history N, summary.json M
//	no history ID
//	unreadable ID: ERROR
//
// a DISAGREE line for each disagreement, followed by the run's notes,
// indented by two spaces. The visualisations of violated keys go to the
// run directory's history/ (VisualPath); their paths are in the notes.
//
// # Caveats
//
//   - Mutual exclusion is checked on the holders' view (acquire and
//     release), widened by each process's clock uncertainty; the store's
//     overlaps are on the store's view. A key the store saw overlap must
//     come out violated: the holder that entered second had its acquire
//     return before the first holder's release was called. A clock
//     uncertainty larger than that gap lets porcupine find an order, and
//     that shows as a disagreement.
//   - Linearizability checking is NP-hard. Each key is checked in chunks
//     cut where no operation is in flight (there the key's state is
//     known from the counts of acquires and releases), each chunk with a
//     timeout; Options bounds the keys, the operations in one check and
//     the time, and every cut is printed.
//   - A history is held in memory while it is judged (its lines come in
//     any order): about 110 bytes per store event and 32 per lock
//     operation, besides porcupine's own while it checks a key.
package check
