package loadgen

import (
	"strconv"

	"github.com/lockbench/lockbench/loadgen/store"
)

// write keeps b, w.out with a line appended, as the lines to report.
func (w *historyWriter) write(b []byte) { w.out = b }

// appendHeader appends h's line to b.
func appendHeader(b []byte, h HistoryHeader) []byte {
	s := h.Setup
	mode := "account"
	if s.Mode == store.PaymentMode {
		mode = "payment"
	}
	b = append(b, `{"ev":"header","version":`...)
	b = strconv.AppendInt(b, HistoryVersion, 10)
	b = appendStr(b, "run", h.Run)
	b = appendStr(b, "strategy", h.Strategy)
	b = appendStr(b, "kind", h.Kind)
	b = appendStr(b, "store", h.Store)
	b = appendStr(b, "mode", mode)
	b = appendBool(b, "fencing", s.Fencing)
	b = appendBool(b, "strict", s.Strict)
	b = appendField(b, "deliveries", int64(s.Deliveries))
	b = append(b, `,"balances":[`...)
	for i, v := range s.Balances {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, `],"payments":0,"clock":[`...)
	for i, c := range h.Clock {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"instance":`...)
		b = strconv.AppendInt(b, int64(c.Instance), 10)
		b = appendStr(b, "where", c.Where)
		b = appendField(b, "offset_ns", c.OffsetNs)
		b = appendField(b, "uncertainty_ns", c.UncertaintyNs)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// storeLine writes one of the store's events.
func (w *historyWriter) storeLine(ev *store.Event) {
	b := w.out
	if ev.Finish {
		b = append(b, `{"ev":"finish","p":`...)
	} else {
		b = append(b, `{"ev":"enter","i":`...)
		b = strconv.AppendInt(b, int64(ev.Instance), 10)
		b = appendField(b, "w", int64(ev.Worker))
		b = append(b, `,"p":`...)
	}
	b = strconv.AppendInt(b, ev.Payment, 10)
	b = appendField(b, "a", int64(ev.Account))
	b = appendStr(b, "k", ev.Key)
	b = appendField(b, "seq", ev.Seq)
	b = appendField(b, "n", ev.Entry)
	b = appendField(b, "at", ev.AtNs)
	b = appendField(b, "token", ev.Token)
	switch {
	case !ev.Finish:
		b = appendBool(b, "processed", ev.Processed)
		b = appendField(b, "balance", ev.Balance)
		b = appendField(b, "version", ev.Version)
	case ev.Wrote:
		b = append(b, `,"write":{"base":`...)
		b = strconv.AppendInt(b, ev.Base, 10)
		b = appendField(b, "debit", ev.Debit)
		b = appendField(b, "balance", ev.NewBalance)
		b = appendBool(b, "applied", ev.Applied)
		if ev.Applied {
			b = appendField(b, "version", ev.Made)
		} else {
			b = appendStr(b, "refused", ev.Refused.String())
		}
		b = append(b, '}')
	}
	w.write(append(b, "}\n"...))
}

// clientLine writes one of a holder's events.
func (w *historyWriter) clientLine(ev *clientEvent) {
	b := w.out
	kind := [...]string{evAcquire: "acquire", evRelease: "release", evTx: "tx", evMessage: "message", evAck: "ack"}[ev.Kind]
	b = append(b, `{"ev":"`...)
	b = append(b, kind...)
	b = append(b, `","i":`...)
	b = strconv.AppendInt(b, int64(ev.Instance), 10)
	b = appendField(b, "w", int64(ev.Worker))
	b = appendField(b, "p", ev.Payment)
	b = appendField(b, "a", int64(ev.Account))
	b = appendStr(b, "k", ev.Key)
	switch ev.Kind {
	case evTx:
		b = appendField(b, "begin", ev.Inv)
		if ev.Claim != 0 {
			b = appendField(b, "claim", ev.Claim)
		}
		b = appendField(b, "end", ev.Ret)
		b = appendBool(b, "claimed", ev.Claimed)
		b = appendBool(b, "debited", ev.Debited)
		outcome := "rollback"
		switch {
		case ev.OK:
			outcome = "commit"
		case ev.Unknown:
			outcome = "unknown"
		}
		b = appendStr(b, "outcome", outcome)
		if ev.Conflict {
			b = appendBool(b, "conflict", true)
		}
	case evMessage:
		b = appendField(b, "at", ev.Inv)
		b = appendBool(b, "redelivery", ev.Redelivery)
	default:
		b = appendField(b, "inv", ev.Inv)
		b = appendField(b, "ret", ev.Ret)
		b = appendBool(b, "ok", ev.OK)
		if ev.OK && ev.Kind == evAcquire {
			b = appendField(b, "token", ev.Token)
		}
		if !ev.OK {
			b = appendStr(b, "err", ev.Err)
		}
	}
	w.write(append(b, "}\n"...))
}

func appendField(b []byte, name string, v int64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

func appendBool(b []byte, name string, v bool) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendBool(b, v)
}

func appendStr(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendQuote(b, v)
}

// historyOfferer is the run's Offerer that also writes the payments it
