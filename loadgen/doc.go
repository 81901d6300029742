// Package loadgen is the load generator: the tiny bank's payments, the
// instances (app servers) that process them through a lock strategy, and
// the run that drives them and collects what they measured.
//
// A Scenario says everything that shapes a run: accounts and their
// distribution, payments and how many times each is delivered (to distinct
// instances first, then to distinct workers of one), instances and their
// workers, open loop at a rate (latency from each payment's intended start,
// the Pacer's) or closed loop, the work inside the lock, TTL, retries, the
// store and its fencing check. NewWorkload turns it into a reproducible
// payment stream from its seed. Run drives one strategy through it under at
// most one Fault and returns a results.Run: the store's judgement (counts)
// and the workers' latency histograms, per phase, per interval and by
// acquire outcome. What it says as it goes (intervals, progress, the
// load's span, its history) leaves it by one Reporter: Tee joins several,
// HistoryFile writes the history, results.HlogStream the intervals.
//
// Processing a delivery is: acquire the lock on the lock key (with the
// scenario's retry policy), read "processed?" and the balance from the
// store, do the work, write the new balance and mark the payment processed
// with the lease's fencing token, release. A transactional strategy
// (strategies.Info.Transactional: pg-unique, pg-for-update, pg-optimistic)
// takes no lock from a lock server: each delivery is one transaction on the
// Postgres store (store.Transactor), protected by a unique constraint, the
// account row's lock or a version check (store.TxKind).
// A broker strategy (the queue, strategies.Info.Redelivers) takes no lock
// either: its deliveries publish the payment and take the next message of
// its shard, and the worker processes the payment that message carries
// (the small interfaces of queue.go, found by type assertion); a message
// the broker delivers again counts in Summary.Redeliveries.
//
// Instances run as goroutines, or as OS processes (the test or lockbench
// binary re-executed: call MaybeRunChild first thing in main or TestMain)
// so that a fault can SIGSTOP a whole instance: its process group, so that
// an adapter process the instance started stops with it. Process instances reach the
// coordinator's store and report their measurements over a local
// connection; those a Spawner places on other hosts (loadgen/agent, a
// `lockbench agent` per host) reach it over TCP, with a token, and are
// paused and continued through their agent (Pauser), never by pid.
//
// loadgen knows strategies only through package strategies' interface and
// registry; servers, faults and the command live above it and hand it what
// it needs (a lock config, a store, a Fault already built on its target).
//
// Caveats: every figure is taken on this host's monotonic clock. Memory
// grows with the accounts and the payments in flight, not with the
// payments offered: the stream is generated as it is dispatched, the store
// releases a payment once its deliveries are judged (loadgen/store), and
// with Options.StreamIntervals a long run's intervals go to disk as they close;
// a --duration run lasts its duration at any rate.
//
// # Dispatch and feed
//
// In an open loop the dispatcher offers each payment at its intended time,
// and its latency counts from then. In a closed loop a payment has no
// intended time: it starts when a worker takes it (Delivery.IntendedNs 0),
// so the time a delivery waits in the harness's queues is in no latency,
// and the dispatcher reads no clock per payment (the warmup and the
// duration end by timers). An instance's shared delivery queue has room
// for one delivery per worker and at least minQueue (QueueDepth): with
// less, the workers of a small instance find it empty, park between
// deliveries and are woken on another core, a tenth of the harness's CPU
// per cycle at full rate.
//
// A closed loop with one delivery per payment on a single in-process
// instance with the memory store has no dispatcher: its workers take the
// payments themselves, a few at a time (feed, feedChunk). Every worker may
// take any payment there, so a dispatcher would add nothing but its cost:
// a channel send and receive a payment, and a goroutine parked and woken
// as the queue fills and drains, on a 2-core machine the cores the lock
// server needs. A worker's take is a mutex held for a few field updates;
// the payments are made and offered to the store a batch at a time
// (OfferBatch) by the worker that finds the batch used up, as the
// dispatcher does. This needs the memory store, whose Offer is an atomic
// add: the Postgres store's is a COPY, which the dispatcher makes while
// the workers work through the queue, and a worker making it would hold up
// every other. What the workers record is what they record behind a
// dispatcher: latency from when a worker takes a payment, the warmup's
// payments not recorded, the payments offered and measured counted as they
// are taken (and what a worker holds when the load ends given back).
//
// # Broker deliveries
//
// A broker delivery's phases: acquire is the publish and the wait for the
// message, critical the processing, release the ack; total runs from the
// delivery's intended start to the ack. A publish the broker drops as a
// duplicate is a cycle of its own (an acquire and a total, no critical or
// release phase), so that every delivery is one cycle, as with a lock. A
// redelivered message took the place of the one its delivery published,
// which is still in the shard: the worker takes one more message for it,
// and so on while the messages it takes are redeliveries.
//
// # Call deadlines
//
// A worker's acquire and release calls take their contexts from a
// deadlines each, not from context.WithTimeout. Each WithTimeout starts
// and stops a runtime timer and registers and unregisters its context with
// the parent's, about 1 µs of CPU on the 2-core development VM, and a lock
// cycle makes two: a third of the harness's CPU per cycle. The calls of
// one deadlines come one at a time, each starting later than the one
// before, so their deadlines only grow and one timer serves them all:
// armed for the first call, it is left running when a call ends; when it
// fires it cancels the call under way if that call's deadline has passed,
// re-arms for the call's deadline if not, and stays stopped between calls.
// It fires about once per timeout (--acquire-timeout, 5 s by default), not
// once per call; a call in the common case costs a small allocation and
// three atomic operations.
//
// A call's context is done at its deadline (context.DeadlineExceeded),
// when the parent is done (the parent's error), or when the call ends
// (context.Canceled, as WithTimeout's cancel does, for anything the call
// left running). Contexts derived from it register with it through its
// AfterFunc method, as they would with one of the context package's,
// without a goroutine each.
//
// With keepDone (a strategy whose client uses a call's context only while
// the call runs: strategies.Info.KeepsNoContext), a call's end does not
// close Done's channel: a worker's call context, channel and all, serves
// its next call, and the channel is closed only when a call is cancelled
// (its deadline, the parent's end) or ends with a function still
// registered with it (a derived context not cancelled by then). go-redis
// asks every command's Done (a look before it takes a connection), so
// without this each call would make a channel and a context on fresh
// memory: 0.2 µs a cycle in BenchmarkCallContext, more under a real
// client's cache pressure.
//
// # Cache lines and garbage
//
// Between two lock cycles of a worker the other workers' cycles, the lock
// client and the kernel evict what the cycle touched, so each cache line a
// cycle touches is a cache miss. The structures a cycle touches are laid
// out for it: a cycle touches two lines of its worker (TestWorkerHotLines);
// a call's begin and end, and the lock client's look at its deadline, touch
// only the first line of its deadlines (TestDeadlinesHotLine); a feed's
// refills write its first line, and a take reads the halt flag on the
// second, which refills do not write (TestFeedHotLine). Each of these is
// padded to a whole number of cache lines, so that the allocator (no
// header before an object under 512 bytes) starts it on a line of its own
// and no other worker's writes share it. On a 2-core machine the line a
// feed's take writes moves between the cores on every take; feedChunk
// makes that a quarter as often.
//
// Garbage is kept down the same way. The collector drains the recorders
// every drainEvery, so that a recorder's buffer holds a few milliseconds of
// values and its chunks go round the pool instead of being allocated
// afresh (40 bytes a cycle, most of the harness's garbage). A worker
// reuses its last cycle's call contexts when nothing can still wait on
// them (cycleCalls): an allocation a cycle costs a tenth of the harness's
// CPU, most of it cache misses on the new memory. A worker's clock reads
// the time once where time.Now reads it twice (wall and monotonic, each a
// vDSO call, 40 ns here).
//
// # Recording latency
//
// The collector gathers every drainEvery (Instance.Gather) and swaps once
// an interval (Instance.Swap); Gather records into the histograms only
// once it holds maxBatch values. A histogram's counts are spread over
// kilobytes (at 3 significant figures, 1,024 counts of 8 bytes an octave),
// and between two drains the lock client and the kernel evict them, so
// that each value recorded at every drain would be a cache miss on its
// count. A few milliseconds of a Redis lock cycle's values (some 2,500 at
// 25,000 cycles a second) land about once in each count's line, and in
// CPU profiles of compare-redis on the development VM that increment was
// 0.4% to 1% of the process's CPU (0.15 to 0.4 µs a cycle), the largest
// single item of the harness. A batch of maxBatch values (some 1,600
// cycles) lands several times in each line: 0.12% in the same run as 0.4%
// recorded at every drain. Sorting each octave's values as well, so that
// the counts are walked in order, took more than it saved.
//
// # Instance processes and schedtrace
//
// Instance processes run with GODEBUG schedtrace at its longest period
// (childSchedTrace). The Go runtime's monitor thread (sysmon) goes into a
// deep sleep whenever it finds every P idle, and the next system call
// wakes it (a futex wake-up of another thread), after which it polls every
// 20 µs again until it finds them idle once more. An instance process has
// one P and a few workers that all wait on the lock server most of the
// time, so it goes idle between almost every two replies, and each time
// would wake its monitor too: on a 2-vCPU VM, process-mode setnx made
// 0.9–1.4 context switches a payment with the deep sleep and 0.4–0.6
// without (goroutine mode: 0.3–0.5), and took 15–20% more CPU a payment
// (BenchmarkAgentTransport). With schedtrace set the monitor never takes
// the deep sleep (runtime/proc.go, sysmon: it would miss its next trace)
// and backs off to a 10 ms poll while idle. Its one side effect is a
// "SCHED …" line on standard error each period, the first once the host's
// monotonic clock (its uptime) passes the period: schedTraceFilter drops
// them.
//
// # Store transports
//
// Instance processes reach the coordinator's store by one of two
// transports (Options.StoreTransport). With TransportSync every Enter and
// Finish is a call the holder waits for: two round trips a critical
// section. With the sequenced store (TransportSequenced,
// docs/seq-store.md) a process-mode run of local instances on the memory
// store shares a sequence page (store.SeqPage) with its instance
// processes, whose store clients send their Enters and Finishes one-way
// (store.Client.Sequence); the coordinator applies them in sequence order
// (store.Sequencer). The page reaches a child as its fd 3, which envSeqFD
// names. Instances on agents share no memory with the coordinator: theirs
// send their Enters one-way and wait for their Finishes' answers, and the
// coordinator applies both as they arrive (store.Client.Arrive): one round
// trip a critical section, not two.
//
// Sequenced is the default for local instance processes, unless
// sequencedBar keeps the run off it: run over every verdict cell in
// process mode under --history, the second judge agreed with the store on
// every cell it served, and every verdict equalled the sync transport's
// (docs/seq-store.md, "The default").
//
// # Designed strikes
//
// A designed strike proves something only if another delivery asked for
// the caught holder's lock while it was forgotten (FaultEnv.Forgot) and
// the holder was inside: a strike that every contender slept through,
// queued behind other payments or gave up on with an error counts as
// missed (Summary.StrikesMissed). The askBoard follows this: the workers
// report every acquire they start and end (ask, done), and the board keeps
// those in flight and, from aim on, every one of the aimed lock. With the
// instances in processes or on agents (deferred) the workers' acquires
// arrive only after the fact, as their history events (record): a strike
// is then judged at the run's end (judgeDeferred), by the same rule
// (askLanded), on every acquire line that reached the coordinator, and is
// not struck again.
//
// # Funding
//
// Opening balances are Funding times the total of each account's payments
// over the funding horizon: the whole run when its length in payments is
// known (--payments N, or --rate × (--duration + --warmup)), else the
// first FundingHorizon payments. NewWorkload generates that prefix of the
// stream once to sum it (time linear in the horizon, memory in the
// accounts) and then starts the stream again from the seed. A bounded
// run's accounts thus start with half of what they will be asked for (at
// the default 0.5) and run dry, so a broken balance check shows as an
// overdraft. A closed-loop --duration run that outlasts the horizon
// declines more and more of its payments once its accounts are dry; an
// overdraft then needs an account with money left, so give --funding above
// 1 to keep a long soak's overdraft check busy.
//
// # Memory estimate
//
// Scenario.MemoryEstimate counts what the arrays sized by the scenario
// take. Per account: the opening balance and its running total while the
// bank is funded (16 B), the memory store's account (64 B) and, in account
// mode, its overlap start (8 B). Per payment in flight (one in hand per
// worker, and as many as its instance's queue holds, QueueDepth) the
// memory store tracks a paymentState (64 B, twice over in its table's free
// slots), and per application in flight one recordVersion (24 B, twice
// over as its log grows); a payment's state is released once every
// delivery of it is judged, so nothing grows with the payments offered.
// Each latency interval the run keeps holds one histogram per phase (about
// 180 KB each). The total is twice that: the garbage collector lets the
// heap grow to twice what is live before it collects.
package loadgen
