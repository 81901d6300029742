package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/strategies"
)

// startInstances builds the instances (in-process or child processes) and
// returns a function that stops them all, for the error paths, and the
// run's sequenced store when seq asks for one (local processes only;
// else nil).
func startInstances(ctx context.Context, sc Scenario, info strategies.Info, seq, history bool, lock strategies.Config, st store.Store, sp Spawner, log io.Writer, asks *askBoard) ([]instance, *seqStore, func(), error) {
	var insts []instance
	var sq *seqStore
	var ln net.Listener
	var pl Placement
	stopAll := func() {
		for _, in := range insts {
			_ = in.Stop()
		}
		if ln != nil {
			_ = ln.Close()
		}
		if pl != nil {
			_ = pl.Close()
		}
	}
	serve := store.ServeOptions{Inline: sc.Store == StoreMemory}
	switch {
	case sc.InstanceMode == InstanceProcess && sp != nil:
		var err error
		if seq {
			sq = newArriveStore()
			serve.Sync = sq.arrive.Load
		}
		if pl, err = sp.Place(st, serve); err != nil {
			return nil, nil, nil, err
		}
	case sc.InstanceMode == InstanceProcess:
		var err error
		if seq {
			if sq, err = newSeqStore(st, sc.Instances); err != nil {
				return nil, nil, nil, err
			}
			serve.Seq = sq.seq
		}
		ln, err = store.ListenLocal()
		if err != nil {
			sq.close()
			return nil, nil, nil, err
		}
		go func() { _ = store.ServeWith(ln, st, serve) }()
	}
	for id := range sc.Instances {
		cfg := InstanceConfig{ID: id, Strategy: info.LookupName(), Info: info, Scenario: sc, Lock: lock, StoreArrive: sq != nil && sq.arrive != nil, History: history, asks: asks}
		var in instance
		var err error
		if sc.InstanceMode == InstanceProcess {
			var addr string
			if ln != nil {
				addr = ln.Addr().String()
			}
			var page *store.SeqPage
			if sq != nil {
				page = sq.page
			}
			in, err = startRemote(ctx, cfg, addr, pl, page, log)
		} else {
			in, err = NewInstance(ctx, cfg, st)
		}
		if err != nil {
			stopAll()
			sq.close()
			return nil, nil, nil, fmt.Errorf("instance %d (%s): %w", id, info.Name, err)
		}
		insts = append(insts, in)
	}
	return insts, sq, stopAll, nil
}
