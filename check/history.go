package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

// FormatVersion is the newest history format this package reads
// (docs/history.md); it reads every version from 1 by the same rules.
const FormatVersion = 2

// maxLineBytes bounds one line of a history: 16 MiB. A header lists every
// account's opening balance, so it is the longest line by far.
const maxLineBytes = 16 << 20

// HistoryDir is the directory of a run directory that holds the
// histories, and HistoryExt their extension.
const (
	HistoryDir = "history"
	HistoryExt = ".jsonl.zst"
)

// HistoryPath is the path of the history of the run with ID id in the run
// directory dir.
func HistoryPath(dir, id string) string {
	return filepath.Join(dir, HistoryDir, id+HistoryExt)
}

// errFormat is the cause of every error about a history's content.
var errFormat = errors.New("check: malformed history")

// line is one line of a history, of any kind: the fields of every kind
// (docs/history.md, "The lines") in one struct, since fields named the
// same mean the same in every kind. Fields this package does not use are
// left out: a reader ignores what it does not know.
type line struct {
	Ev string `json:"ev"`

	// header
	Version  int64        `json:"version"` // the header's format version; an enter's account version
	Strategy string       `json:"strategy"`
	Kind     string       `json:"kind"`
	Mode     string       `json:"mode"`
	Fencing  bool         `json:"fencing"`
	Strict   bool         `json:"strict"`
	Balances []int64      `json:"balances"`
	Clock    []clockEntry `json:"clock"`

	I     int32  `json:"i"`
	W     int32  `json:"w"`
	P     int64  `json:"p"`
	A     int32  `json:"a"`
	K     string `json:"k"`
	Token int64  `json:"token"`

	// acquire, release
	Inv int64  `json:"inv"`
	Ret int64  `json:"ret"`
	OK  bool   `json:"ok"`
	Err string `json:"err"`
	// enter: whether the holder read the payment as processed
	Processed bool `json:"processed"`

	// enter, finish; a strike's number is N too
	Seq   int64  `json:"seq"`
	N     int64  `json:"n"`
	At    int64  `json:"at"`
	Write *write `json:"write"`

	// tx; a strike's End too
	End      int64  `json:"end"`
	Claimed  bool   `json:"claimed"`
	Outcome  string `json:"outcome"`
	Conflict bool   `json:"conflict"`

	// strike; a designed one judged on whether it landed also has K, P,
	// I, W (the caught holder) and Forgot
	Start   int64 `json:"start"`
	Close   int64 `json:"close"`
	Forgot  int64 `json:"forgot"`
	Caught  int64 `json:"caught"`
	Stopped bool  `json:"stopped"`
	Missed  bool  `json:"missed"`

	// end
	Payments *int64 `json:"payments"`
}

// clockEntry is one instance's clock in the header.
type clockEntry struct {
	Instance      int32 `json:"instance"`
	UncertaintyNs int64 `json:"uncertainty_ns"`
}

// write is a finish's write.
type write struct {
	Base    int64  `json:"base"`
	Debit   int64  `json:"debit"`
	Balance int64  `json:"balance"`
	Applied bool   `json:"applied"`
	Version int64  `json:"version"`
	Refused string `json:"refused"`
}

// header is what the first line says of the run.
type header struct {
	strategy, kind, mode string
	fencing, strict      bool
	balances             []int64
	// uncertainty is each instance's clock uncertainty, in ns.
	uncertainty map[int32]int64
}

// storeEvent is an enter or a finish, as much of it as the judging needs.
type storeEvent struct {
	seq, n, at, token, p int64
	wr                   write // hasWrite only
	a, i, w              int32
	finish, hasWrite     bool
	processed            bool  // an enter's read
	version              int64 // the account record's version an enter read
	line                 int   // its line in the history
}

// holderKey is a worker's hold of a lock key: instance, worker, key.
type holderKey struct {
	i, w int32
	k    string
}

// lockOp is an acquire or a release that succeeded.
type lockOp struct {
	inv, ret int64
	i, w     int32
	release  bool
}

// keyData is everything of one lock key.
type keyData struct {
	events []storeEvent
	ops    []lockOp
}

// txApp is a committed, claimed tx: an application.
type txApp struct {
	p, end int64
	a      int32
}

// strike is a fault's strike and its window; for a designed strike
// judged on whether it landed, the caught holder's key, instance and
// worker, and when its lock was forgotten (0: not judged so) until end.
type strike struct {
	start, close int64
	caught       int64
	forgot, end  int64
	k            string
	i, w         int32
	// stopped: the holder's process was stopped whole (none of its
	// instance's workers asked); missed: the line says so (for a strike
	// that caught nobody, the only way to know).
	stopped, missed bool
}

// askLine is an acquire line: another holder's ask, for strikes_missed.
type askLine struct {
	i, w         int32
	inv, ret     int64
	answered, ok bool
}

// history is a decoded history: the lines the rules use, grouped.
type history struct {
	hdr    header
	keys   map[string]*keyData
	offers int64
	// payments is the end line's count of the payments the run offered
	// its workers, when the history has one: unprocessed counts from it.
	payments *int64
	tx       []txApp
	// maybeTx are the claimed transactions whose COMMIT failed on the
	// way (outcome "unknown"): each may or may not be an application.
	maybeTx []txApp
	strikes []strike
	// asks are every key's acquire lines.
	asks map[string][]askLine
	// acquires counts the acquire lines with ok.
	acquires int64
	// conflicts counts the tx lines whose version check failed.
	conflicts int64
	// notAcquired counts the acquire lines that gave up (err
	// not_acquired); errs the acquire and release lines' errors by
	// summary.json's class (release's not_owner is lost_lock).
	notAcquired int64
	errs        map[string]int64
	// granted is each worker's first ok acquire of each key: its inv.
	granted map[holderKey]int64
	// ended: the history has its end line.
	ended bool
}

// readHistory decodes the history file at path.
func readHistory(path string) (*history, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("check: %s: %w", path, err)
	}
	defer zr.Close()
	h, err := decodeHistory(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// decodeHistory reads the JSON lines of a history from r, one at a time.
func decodeHistory(r io.Reader) (*history, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	h := &history{keys: map[string]*keyData{}, errs: map[string]int64{}, granted: map[holderKey]int64{}}
	num := 0
	for sc.Scan() {
		num++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", errFormat, num, err)
		}
		if err := h.add(&l, num); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("check: line %d: %w", num+1, err)
	}
	if h.hdr.kind == "" {
		return nil, fmt.Errorf("%w: no header", errFormat)
	}
	return h, nil
}

// add files one line of the history.
func (h *history) add(l *line, num int) error {
	if h.hdr.kind == "" && l.Ev != "header" {
		return fmt.Errorf("%w: line %d is a %q, not the header", errFormat, num, l.Ev)
	}
	switch l.Ev {
	case "header":
		if h.hdr.kind != "" {
			return fmt.Errorf("%w: line %d: a second header", errFormat, num)
		}
		return h.setHeader(l)
	case "offer":
		h.offers++
	case "end":
		h.ended = true
		if l.Payments != nil {
			h.payments = l.Payments
		}
	case "acquire", "release":
		if l.Ev == "acquire" {
			if h.asks == nil {
				h.asks = map[string][]askLine{}
			}
			h.asks[l.K] = append(h.asks[l.K], askLine{i: l.I, w: l.W, inv: l.Inv, ret: l.Ret, answered: l.OK || l.Err == "not_acquired", ok: l.OK})
		}
		if l.OK {
			k := h.key(l.K)
			k.ops = append(k.ops, lockOp{inv: l.Inv, ret: l.Ret, i: l.I, w: l.W, release: l.Ev == "release"})
			if l.Ev == "acquire" {
				h.acquires++
				if at, ok := h.granted[holderKey{l.I, l.W, l.K}]; !ok || l.Inv < at {
					h.granted[holderKey{l.I, l.W, l.K}] = l.Inv
				}
			}
			break
		}
		switch {
		case l.Ev == "acquire" && l.Err == "not_acquired":
			h.notAcquired++
		case l.Err == "not_owner":
			h.errs["lost_lock"]++
		case l.Err != "" && l.Err != "ended":
			h.errs[l.Err]++
		}
	case "enter", "finish":
		e := storeEvent{seq: l.Seq, n: l.N, at: l.At, token: l.Token, p: l.P, a: l.A, i: l.I, w: l.W, finish: l.Ev == "finish",
			processed: l.Processed, version: l.Version, line: num}
		if l.Write != nil {
			if !e.finish {
				return fmt.Errorf("%w: line %d: an enter with a write", errFormat, num)
			}
			e.wr, e.hasWrite = *l.Write, true
		}
		k := h.key(l.K)
		k.events = append(k.events, e)
	case "tx":
		if l.Conflict {
			h.conflicts++
		}
		switch {
		case l.Outcome == "commit" && l.Claimed:
			h.tx = append(h.tx, txApp{p: l.P, end: l.End, a: l.A})
		case l.Outcome == "unknown" && l.Claimed:
			h.maybeTx = append(h.maybeTx, txApp{p: l.P, end: l.End, a: l.A})
		}
	case "strike":
		h.strikes = append(h.strikes, strike{start: l.Start, close: l.Close, caught: l.Caught, forgot: l.Forgot, end: l.End, k: l.K, i: l.I, w: l.W,
			stopped: l.Stopped, missed: l.Missed})
	}
	return nil
}

// setHeader takes the header line.
func (h *history) setHeader(l *line) error {
	if l.Version < 1 || l.Version > FormatVersion {
		return fmt.Errorf("%w: format version %d; this checker reads versions 1 to %d", errFormat, l.Version, FormatVersion)
	}
	if l.Kind == "" {
		return fmt.Errorf("%w: the header has no kind", errFormat)
	}
	h.hdr = header{
		strategy: l.Strategy, kind: l.Kind, mode: l.Mode,
		fencing: l.Fencing, strict: l.Strict, balances: l.Balances,
		uncertainty: make(map[int32]int64, len(l.Clock)),
	}
	for _, c := range l.Clock {
		h.hdr.uncertainty[c.Instance] = c.UncertaintyNs
	}
	return nil
}

// key returns the data of lock key k, created on first use.
func (h *history) key(k string) *keyData {
	d := h.keys[k]
	if d == nil {
		d = &keyData{}
		h.keys[k] = d
	}
	return d
}
