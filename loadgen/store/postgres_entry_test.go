package store

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// eventLog is a Recorder that keeps copies of the events it is sent.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	lanes  map[string]int // the lane of each key's events
	bad    []string
}

func (l *eventLog) Record(lane int, ev *Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lanes == nil {
		l.lanes = map[string]int{}
	}
	if lane < 0 || lane >= Lanes {
		l.bad = append(l.bad, fmt.Sprintf("lane %d outside [0, %d)", lane, Lanes))
	}
	if prev, ok := l.lanes[ev.Key]; ok && prev != lane {
		l.bad = append(l.bad, fmt.Sprintf("key %q in lanes %d and %d", ev.Key, prev, lane))
	}
	l.lanes[ev.Key] = lane
	l.events = append(l.events, *ev)
}

func (l *eventLog) take(t *testing.T) []Event {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		t.Error(b)
	}
	return append([]Event(nil), l.events...)
}

// pgEnter and pgFinish make a call that must succeed.
func pgEnter(ctx context.Context, t *testing.T, p *Postgres, r EnterReq) EnterResp {
	t.Helper()
	got, err := p.Enter(ctx, r)
	if err != nil {
		t.Fatalf("Enter(%+v): %v", r, err)
	}
	return got
}

func pgFinish(ctx context.Context, t *testing.T, p *Postgres, r FinishReq) FinishResp {
	t.Helper()
	got, err := p.Finish(ctx, r)
	if err != nil {
		t.Fatalf("Finish(%+v): %v", r, err)
	}
	return got
}

// TestPostgresSupersededWrite checks that a write is judged stale by the
// order of the Enters, not by the token: a holder of the same key entered
// after it (and is still inside, or left without writing) makes its write
// stale_accepted, or stale_rejected when fencing refuses its token; with
// no token (0) fencing cannot refuse it, and it is stale_accepted.
func TestPostgresSupersededWrite(t *testing.T) {
	p := newTestPostgres(t)
	cases := []struct {
		name           string
		fencing        bool
		tokenA, tokenB int64
		bWritesFirst   bool // B leaves, without writing, before A writes
		wantA          FinishResp
		wantB          FinishResp
		want           Counts
	}{
		{"unfenced", false, 1, 2, false,
			FinishResp{Applied: true, Refused: Stale}, FinishResp{Applied: true},
			Counts{Processed: 2, Lost: 1, LostUpdates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2}},
		{"fenced", true, 1, 2, false,
			FinishResp{StaleRejected: true, Refused: Stale}, FinishResp{Applied: true},
			Counts{Processed: 1, Unprocessed: 1, Overlaps: 1, StaleRejected: 1, Applications: 1}},
		{"no tokens, unfenced", false, 0, 0, false,
			FinishResp{Applied: true, Refused: Stale}, FinishResp{Applied: true},
			Counts{Processed: 2, Lost: 1, LostUpdates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2}},
		{"no tokens, fenced", true, 0, 0, false,
			FinishResp{Applied: true, Refused: Stale}, FinishResp{Applied: true},
			Counts{Processed: 2, Lost: 1, LostUpdates: 1, Overlaps: 1, StaleAccepted: 1, Applications: 2}},
		{"no tokens, later holder left", true, 0, 0, true,
			FinishResp{Applied: true, Refused: Stale}, left,
			Counts{Processed: 1, Unprocessed: 1, Overlaps: 1, StaleAccepted: 1, Applications: 1}},
		{"later holder left, fenced", true, 1, 2, true,
			FinishResp{StaleRejected: true, Refused: Stale}, left,
			Counts{Unprocessed: 2, Overlaps: 1, StaleRejected: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			if err := p.Reset(ctx, bank(AccountMode, c.fencing, []int64{100}, 0, 0)); err != nil {
				t.Fatal(err)
			}
			a := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: c.tokenA, Payment: 0, Account: 0})
			b := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: c.tokenB, Payment: 1, Account: 0})
			if a.Entry != 1 || b.Entry != 2 {
				t.Fatalf("entries: got %d, %d; want 1, 2", a.Entry, b.Entry)
			}
			finB := WriteFor(FinishReq{LockKey: "a0", Token: c.tokenB, Payment: 1, Account: 0}, b, 20)
			if c.bWritesFirst {
				finB.Apply = false // as if it had found the payment processed
				if got := pgFinish(ctx, t, p, finB); got != c.wantB {
					t.Errorf("Finish B: got %+v; want %+v", got, c.wantB)
				}
			}
			finA := WriteFor(FinishReq{LockKey: "a0", Token: c.tokenA, Payment: 0, Account: 0}, a, 10)
			if got := pgFinish(ctx, t, p, finA); got != c.wantA {
				t.Errorf("Finish A: got %+v; want %+v", got, c.wantA)
			}
			if !c.bWritesFirst {
				if got := pgFinish(ctx, t, p, finB); got != c.wantB {
					t.Errorf("Finish B: got %+v; want %+v", got, c.wantB)
				}
			}
			checkCounts(ctx, t, p, c.want)
		})
	}
}

// TestPostgresTokenRegressed checks a counter that went back (a lock
// service that restarted): a holder not superseded with a token older
// than the newest the key has seen is token_regressed, refused with
// fencing and applied without, and never stale. A token handed out twice
// is token_reused, refused only with Strict.
func TestPostgresTokenRegressed(t *testing.T) {
	p := newTestPostgres(t)
	cases := []struct {
		name            string
		fencing, strict bool
		second          int64 // the second holder's token
		want            FinishResp
		counts          Counts
	}{
		{"regressed, fenced", true, false, 1,
			FinishResp{StaleRejected: true, Refused: TokenRegressed},
			Counts{Processed: 1, Unprocessed: 1, TokenRegressed: 1, Applications: 1}},
		{"regressed, strict", true, true, 1,
			FinishResp{StaleRejected: true, Refused: TokenRegressed},
			Counts{Processed: 1, Unprocessed: 1, TokenRegressed: 1, Applications: 1}},
		{"regressed, unfenced", false, false, 1,
			FinishResp{Applied: true, Refused: TokenRegressed},
			Counts{Processed: 2, TokenRegressed: 1, Applications: 2}},
		{"reused, fenced", true, false, 5,
			FinishResp{Applied: true, Refused: TokenReused},
			Counts{Processed: 2, TokenReused: 1, Applications: 2}},
		{"reused, strict", true, true, 5,
			FinishResp{StaleRejected: true, Refused: TokenReused},
			Counts{Processed: 1, Unprocessed: 1, TokenReused: 1, Applications: 1}},
		{"newer", true, true, 6,
			FinishResp{Applied: true},
			Counts{Processed: 2, Applications: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			s := bank(AccountMode, c.fencing, []int64{100}, 0, 0)
			s.Strict = c.strict
			if err := p.Reset(ctx, s); err != nil {
				t.Fatal(err)
			}
			read := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0})
			fin := WriteFor(FinishReq{LockKey: "a0", Token: 5, Payment: 0, Account: 0}, read, 10)
			if got := pgFinish(ctx, t, p, fin); got != applied {
				t.Fatalf("first Finish: got %+v; want %+v", got, applied)
			}
			read = pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: c.second, Payment: 1, Account: 0})
			if read.Entry != 2 || read.Version != 1 {
				t.Fatalf("second Enter: got %+v; want entry 2, version 1", read)
			}
			fin = WriteFor(FinishReq{LockKey: "a0", Token: c.second, Payment: 1, Account: 0}, read, 10)
			if got := pgFinish(ctx, t, p, fin); got != c.want {
				t.Errorf("second Finish: got %+v; want %+v", got, c.want)
			}
			checkCounts(ctx, t, p, c.counts)
		})
	}
}

// TestPostgresHistory checks the events a recorder receives: one per
// Enter and Finish, with the key's seq increasing, the entry numbers, the
// versions applied writes made, and the store's times, whose difference
// over a window of exposure is exactly what overlap_ns counted.
func TestPostgresHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newTestPostgres(t)
	var log eventLog
	p.SetRecorder(&log)
	if err := p.Reset(ctx, bank(AccountMode, false, []int64{1000, 1000}, 0, 0, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixNano()
	e0 := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0, Instance: 1, Worker: 2})
	f0 := pgFinish(ctx, t, p, WriteFor(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, e0, 10))
	e1 := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: 2, Payment: 1, Account: 0, Instance: 0, Worker: 1})
	e2 := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: 3, Payment: 2, Account: 0, Instance: 1, Worker: 0})
	// Another key: its own seq and entries.
	eb := pgEnter(ctx, t, p, EnterReq{LockKey: "a1", Token: 7, Payment: 4, Account: 1})
	time.Sleep(5 * time.Millisecond) // a window of exposure that lasts
	f1 := pgFinish(ctx, t, p, WriteFor(FinishReq{LockKey: "a0", Token: 2, Payment: 1, Account: 0}, e1, 10))
	f2 := pgFinish(ctx, t, p, WriteFor(FinishReq{LockKey: "a0", Token: 3, Payment: 2, Account: 0}, e2, 10))
	fb := pgFinish(ctx, t, p, FinishReq{LockKey: "a1", Token: 7, Payment: 4, Account: 1, Entry: eb.Entry})
	e3 := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: 4, Payment: 3, Account: 0})
	f3 := pgFinish(ctx, t, p, WriteFor(FinishReq{LockKey: "a0", Token: 4, Payment: 3, Account: 0}, e3, 2000)) // declined
	end := time.Now().UnixNano()

	stale := FinishResp{Applied: true, Refused: Stale}
	for _, c := range []struct {
		name      string
		got, want FinishResp
	}{{"f0", f0, applied}, {"f1", f1, stale}, {"f2", f2, applied}, {"fb", fb, left}, {"f3", f3, applied}} {
		if c.got != c.want {
			t.Errorf("%s: got %+v; want %+v", c.name, c.got, c.want)
		}
	}
	if e0.Entry != 1 || e1.Entry != 2 || e2.Entry != 3 || e3.Entry != 4 || eb.Entry != 1 {
		t.Errorf("entries: got %d %d %d %d, b %d; want 1 2 3 4, b 1", e0.Entry, e1.Entry, e2.Entry, e3.Entry, eb.Entry)
	}

	events := log.take(t)
	type want struct {
		finish        bool
		key           string
		entry         int64
		wrote, appl   bool
		made          int64
		refused       Refusal
		instance, wkr int32
		payment       int64
	}
	wants := []want{
		{false, "a0", 1, false, false, 0, 0, 1, 2, 0},
		{true, "a0", 1, true, true, 1, NotRefused, 0, 0, 0},
		{false, "a0", 2, false, false, 0, 0, 0, 1, 1},
		{false, "a0", 3, false, false, 0, 0, 1, 0, 2},
		{false, "a1", 1, false, false, 0, 0, 0, 0, 4},
		{true, "a0", 2, true, true, 2, Stale, 0, 0, 1},
		{true, "a0", 3, true, true, 3, NotRefused, 0, 0, 2},
		{true, "a1", 1, false, false, 0, 0, 0, 0, 4},
		{false, "a0", 4, false, false, 0, 0, 0, 0, 3},
		{true, "a0", 4, true, true, 4, NotRefused, 0, 0, 3},
	}
	if len(events) != len(wants) {
		t.Fatalf("got %d events; want %d: %+v", len(events), len(wants), events)
	}
	lastSeq := map[string]int64{}
	lastAt := map[string]int64{}
	for i, ev := range events {
		w := wants[i]
		got := want{ev.Finish, ev.Key, ev.Entry, ev.Wrote, ev.Applied, ev.Made, ev.Refused, ev.Instance, ev.Worker, ev.Payment}
		if got != w {
			t.Errorf("event %d: got %+v; want %+v", i, got, w)
		}
		if ev.Seq <= lastSeq[ev.Key] {
			t.Errorf("event %d: seq %d after %d on key %s; want increasing", i, ev.Seq, lastSeq[ev.Key], ev.Key)
		}
		lastSeq[ev.Key] = ev.Seq
		if ev.AtNs < start-int64(time.Minute) || ev.AtNs > end+int64(time.Minute) || ev.AtNs%1000 != 0 {
			t.Errorf("event %d: at %d; want microseconds near [%d, %d]", i, ev.AtNs, start, end)
		}
		if ev.AtNs < lastAt[ev.Key] {
			t.Errorf("event %d: at %d before the key's previous event's %d", i, ev.AtNs, lastAt[ev.Key])
		}
		lastAt[ev.Key] = ev.AtNs
	}
	// What the holders sent and read.
	if ev := events[1]; ev.Token != 1 || ev.Base != 0 || ev.Debit != 10 || ev.NewBalance != 990 || ev.Account != 0 {
		t.Errorf("f0's event: got %+v", ev)
	}
	if ev := events[5]; ev.Token != 2 || ev.Base != 1 || ev.NewBalance != 980 {
		t.Errorf("f1's event: got %+v", ev)
	}
	if ev := events[9]; ev.Debit != 0 || ev.NewBalance != 980 || ev.Base != 3 {
		t.Errorf("f3's event (declined): got %+v", ev)
	}
	if ev := events[8]; ev.Processed || ev.Balance != 980 || ev.Version != 3 || ev.Token != 4 {
		t.Errorf("e3's event: got %+v; want the read balance 980, version 3", ev)
	}
	if ev := events[0]; ev.Seq != 1 || ev.Balance != 1000 || ev.Version != 0 {
		t.Errorf("e0's event: got %+v; want seq 1, balance 1000, version 0", ev)
	}
	// The window: opened by e2's Enter, closed by f1's Finish.
	window := events[5].AtNs - events[3].AtNs
	if window < int64(5*time.Millisecond) {
		t.Errorf("window %d ns; want at least 5ms", window)
	}
	c, err := p.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.OverlapNs != window || c.OverlapMaxNs != window || c.Overlaps != 1 {
		t.Errorf("Counts: overlaps %d, overlap_ns %d, max %d; want 1, %d (f1.at − e2.at), %d",
			c.Overlaps, c.OverlapNs, c.OverlapMaxNs, window, window)
	}

	// No recorder: no events.
	p.SetRecorder(nil)
	e := pgEnter(ctx, t, p, EnterReq{LockKey: "a1", Payment: 4, Account: 1})
	pgFinish(ctx, t, p, FinishReq{LockKey: "a1", Payment: 4, Account: 1, Entry: e.Entry})
	if n := len(log.take(t)); n != len(wants) {
		t.Errorf("after SetRecorder(nil): %d events; want %d", n, len(wants))
	}
}

// TestPostgresHistoryConcurrent runs holders of one key at once and
// derives the counts from the history (docs/history.md) as a second
// judge would: per key in seq order, the entry numbers, the overlaps and
// their windows, and the stale writes must equal the store's.
func TestPostgresHistoryConcurrent(t *testing.T) {
	const workers, cycles = 8, 25
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newTestPostgres(t)
	var log eventLog
	p.SetRecorder(&log)
	defer p.SetRecorder(nil)
	accounts := make([]int32, workers*cycles)
	if err := p.Reset(ctx, bank(PaymentMode, false, []int64{1 << 20}, accounts...)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cycles {
				pay := int64(w*cycles + i)
				r := EnterReq{LockKey: "k", Payment: pay, Account: 0, Worker: int32(w)}
				read, err := p.Enter(ctx, r)
				if err != nil {
					t.Error(err)
					return
				}
				fin := WriteFor(FinishReq{LockKey: "k", Payment: pay, Account: 0}, read, 1)
				if _, err := p.Finish(ctx, fin); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	events := log.take(t)
	if len(events) != 2*workers*cycles {
		t.Fatalf("got %d events; want %d", len(events), 2*workers*cycles)
	}
	sort.Slice(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	var (
		derived      Counts
		entries      int64
		inside       int
		opened, last int64
		made         int64
	)
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("seqs: %d at %d; want 1, 2, … without gaps", ev.Seq, i)
		}
		if ev.AtNs < last {
			t.Errorf("seq %d: at %d before the previous event's %d", ev.Seq, ev.AtNs, last)
		}
		last = ev.AtNs
		if !ev.Finish {
			entries++
			if ev.Entry != entries {
				t.Errorf("seq %d: entry %d; want %d", ev.Seq, ev.Entry, entries)
			}
			if inside > 0 {
				derived.Overlaps++
			}
			if inside == 1 {
				opened = ev.AtNs
			}
			inside++
			continue
		}
		if inside == 2 {
			d := max(0, ev.AtNs-opened)
			derived.OverlapNs += d
			derived.OverlapMaxNs = max(derived.OverlapMaxNs, d)
		}
		inside--
		if !ev.Wrote {
			continue
		}
		superseded := entries > ev.Entry
		if want := map[bool]Refusal{true: Stale, false: NotRefused}[superseded]; ev.Refused != want || !ev.Applied {
			t.Errorf("seq %d: applied %v, refused %q; want applied, %q", ev.Seq, ev.Applied, ev.Refused, want)
		}
		if superseded {
			derived.StaleAccepted++
		}
		made++
		if ev.Made != made {
			t.Errorf("seq %d: made version %d; want %d", ev.Seq, ev.Made, made)
		}
		derived.Applications++
	}
	c, err := p.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := Counts{Overlaps: c.Overlaps, OverlapNs: c.OverlapNs, OverlapMaxNs: c.OverlapMaxNs,
		StaleAccepted: c.StaleAccepted, Applications: c.Applications}
	if got != derived {
		t.Errorf("Counts: got %+v; the history derives %+v", got, derived)
	}
	t.Logf("%d overlaps, %d stale writes, overlap %v", c.Overlaps, c.StaleAccepted, time.Duration(c.OverlapNs))
}

// TestPostgresResetKeepsFunctions checks that a Reset leaves the
// functions of the current version in place (other sessions have plans
// for them) and replaces those of an older lockbench, whose results
// differ, along with the lock key table's old columns.
func TestPostgresResetKeepsFunctions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newTestPostgres(t)
	setup := bank(AccountMode, true, []int64{100}, 0)
	if err := p.Reset(ctx, setup); err != nil {
		t.Fatal(err)
	}
	oids := func() (enter, finish uint32) {
		t.Helper()
		err := p.pool.QueryRow(ctx, `SELECT
		  coalesce(to_regprocedure('lockbench_store_enter(text,bigint,bigint,int)')::oid, 0),
		  coalesce(to_regprocedure('lockbench_store_finish(text,bigint,bigint,int,bigint,bool,bigint,bigint,bigint)')::oid, 0)`).
			Scan(&enter, &finish)
		if err != nil {
			t.Fatal(err)
		}
		return enter, finish
	}
	enter, finish := oids()
	if enter == 0 || finish == 0 {
		t.Fatalf("functions: got oids %d, %d", enter, finish)
	}
	if err := p.Reset(ctx, setup); err != nil {
		t.Fatal(err)
	}
	if e, f := oids(); e != enter || f != finish {
		t.Errorf("Reset replaced the functions: oids %d, %d; were %d, %d", e, f, enter, finish)
	}

	// An older lockbench's database.
	other, err := pgx.Connect(ctx, postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	for _, q := range []string{
		`DROP FUNCTION lockbench_store_enter(text, bigint, bigint, int)`,
		`DROP FUNCTION lockbench_store_finish(text, bigint, bigint, int, bigint, bool, bigint, bigint, bigint)`,
		`CREATE FUNCTION lockbench_store_enter(p_key text, p_token bigint, p_payment bigint, p_account int)
		 RETURNS TABLE (processed bool, balance bigint, version bigint)
		 LANGUAGE sql AS $$ SELECT false, 0::bigint, 0::bigint $$`,
		`CREATE FUNCTION lockbench_store_finish(p_key text, p_token bigint, p_payment bigint, p_account int,
		   p_apply bool, p_debit bigint, p_base bigint, p_new_balance bigint)
		 RETURNS TABLE (applied bool, stale_rejected bool)
		 LANGUAGE sql AS $$ SELECT false, false $$`,
		`ALTER TABLE lockbench_store_lock_keys DROP COLUMN entries, DROP COLUMN events,
		   DROP COLUMN token_regressed, DROP COLUMN overlap_since_ns, ADD COLUMN overlap_since timestamptz`,
	} {
		if _, err := other.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A fresh store: the pool's connections had plans for the functions
	// dropped above.
	p = newTestPostgres(t)
	if err := p.Reset(ctx, setup); err != nil {
		t.Fatalf("Reset over an older database: %v", err)
	}
	read := pgEnter(ctx, t, p, EnterReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0})
	if read.Entry != 1 || read.Balance != 100 {
		t.Errorf("Enter: got %+v; want entry 1, balance 100", read)
	}
	if got := pgFinish(ctx, t, p, WriteFor(FinishReq{LockKey: "a0", Token: 1, Payment: 0, Account: 0}, read, 10)); got != applied {
		t.Errorf("Finish: got %+v; want %+v", got, applied)
	}
	checkCounts(ctx, t, p, Counts{Processed: 1, Applications: 1})
}
