// Package watchdog keeps leases alive while their holders run, as
// Redisson's lock watchdog does: a background renewal every TTL/3
// (DefaultPeriod) extends the lease to a full TTL again, through the
// lease's strategies.Extender, until the lease is released, its strategy is
// closed, or a renewal fails (the lock is then left to expire: the holder
// has lost it, and Release reports strategies.ErrNotOwner).
//
// It registers `setnx-watchdog`: setnx with a watchdog. Its point is what
// the faults show: slow work past the TTL keeps the lock, because the
// renewals go on while the work runs; a paused process does not, because
// the watchdog is paused with it (the lease expires, another holder takes
// the lock, and the paused holder writes when it resumes). A watchdog makes
// the TTL a bound on how long a dead holder blocks others, not on how long
// a live one may work.
//
// Caveats: renewals cost one round trip per lease every TTL/3; a renewal
// that outlasts the lease (a stalled network) loses the lock as a pause
// does; Deadline moves with each renewal, so a holder that checks it sees
// its remaining validity.
package watchdog
