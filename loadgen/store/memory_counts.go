package store

import (
	"context"
)

// Counts computes the verdict from the store's state: the counts of the
// payments released and of those it still tracks.
func (m *Memory) Counts(context.Context) (Counts, error) {
	m.lockAll()
	defer m.unlockAll()
	var c Counts
	for i := range m.shards {
		sh := &m.shards[i]
		c.Overlaps += sh.c.Overlaps
		c.OverlapNs += sh.c.OverlapNs
		c.OverlapMaxNs = max(c.OverlapMaxNs, sh.c.OverlapMaxNs)
		c.StaleRejected += sh.c.StaleRejected
		c.StaleAccepted += sh.c.StaleAccepted
		c.TokenRegressed += sh.c.TokenRegressed
		c.TokenReused += sh.c.TokenReused
		c.Overdrafts += sh.c.Overdrafts
		c.Applications += sh.applications
		c.Processed += sh.c.Processed
		c.Duplicates += sh.c.Duplicates
		c.Lost += sh.c.Lost
		for a := i; a < len(m.accounts); a += memShards {
			c.LostUpdates += m.accounts[a].appliedDebits - m.accounts[a].inRecordDebits
		}
		sh.payments.each(func(ps *paymentState) { c.fold(ps) })
	}
	total := m.offered.Load()
	if m.setup.PaymentAccount != nil {
		total = int64(m.setup.Payments)
	}
	c.Unprocessed = max(0, total-c.Processed)
	return c, nil
}

// fold adds payment ps's final counts to c.
func (c *Counts) fold(ps *paymentState) {
	n := int64(ps.applications)
	if n > 0 {
		c.Processed++
		c.Duplicates += n - 1
	}
	// Every application was acknowledged to its worker (Applied), so a
	// payment applied but no longer in its account's record is
	// acknowledged work lost.
	if n > 0 && ps.inRecord == 0 {
		c.Lost++
	}
}
