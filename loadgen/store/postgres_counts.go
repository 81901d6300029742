package store

import (
	"context"
	"fmt"
	"time"
)

// postgresCountsTimeout bounds Counts, whose scan of the tables grows with
// the run: 1 minute.
const postgresCountsTimeout = time.Minute

// Counts computes the verdict from the tables, as Memory does from its
// state: lost_updates is Σ debits applied − Σ debits in the records.
func (p *Postgres) Counts(ctx context.Context) (Counts, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresCountsTimeout)
	defer cancel()
	var c Counts
	// One statement, so one snapshot of all three tables.
	err := p.pool.QueryRow(ctx, `
SELECT p.processed, p.duplicates, p.lost, p.unprocessed, a.overdrafts,
       a.lost_updates, k.overlaps, k.stale_rejected, k.stale_accepted, p.applications,
       k.overlap_ns, k.overlap_max_ns, k.token_reused, k.token_regressed
FROM (SELECT count(*) FILTER (WHERE applications > 0) AS processed,
             coalesce(sum(applications - 1) FILTER (WHERE applications > 1), 0)::bigint AS duplicates,
             count(*) FILTER (WHERE applications > 0 AND in_record = 0) AS lost,
             count(*) FILTER (WHERE applications = 0) AS unprocessed,
             coalesce(sum(applications), 0)::bigint AS applications
      FROM lockbench_store_payments) p,
     (SELECT count(*) FILTER (WHERE overdrawn) AS overdrafts,
             coalesce(sum(applied_debits - in_record_debits), 0)::bigint AS lost_updates
      FROM lockbench_store_accounts) a,
     (SELECT coalesce(sum("overlaps"), 0)::bigint AS overlaps,
             coalesce(sum(stale_rejected), 0)::bigint AS stale_rejected,
             coalesce(sum(stale_accepted), 0)::bigint AS stale_accepted,
             coalesce(sum(overlap_ns), 0)::bigint AS overlap_ns,
             coalesce(max(overlap_max_ns), 0)::bigint AS overlap_max_ns,
             coalesce(sum(token_reused), 0)::bigint AS token_reused,
             coalesce(sum(token_regressed), 0)::bigint AS token_regressed
      FROM lockbench_store_lock_keys) k`,
	).Scan(&c.Processed, &c.Duplicates, &c.Lost, &c.Unprocessed, &c.Overdrafts,
		&c.LostUpdates, &c.Overlaps, &c.StaleRejected, &c.StaleAccepted, &c.Applications,
		&c.OverlapNs, &c.OverlapMaxNs, &c.TokenReused, &c.TokenRegressed)
	if err != nil {
		return Counts{}, fmt.Errorf("store: postgres counts: %w", err)
	}
	return c, nil
}
