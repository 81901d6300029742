// The instance process's side: MaybeRunChild turns this process into an
// instance, which reads its configuration, runs its Instance on the
// deliveries from stdin and reports its stats on stdout.

package loadgen

import (
	"bufio"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// MaybeRunChild runs this process as an instance process and exits, if it
// was started as one; otherwise it returns at once. Call it at the start of
// main (and of TestMain in tests that use process mode), after every
// strategy package is imported.
func MaybeRunChild() {
	if os.Getenv(envChild) != childName {
		return
	}
	if err := runChild(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench instance:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(in io.Reader, out io.Writer) error {
	var cfg struct {
		InstanceConfig
		StoreAddr string
	}
	if err := json.Unmarshal([]byte(os.Getenv(envInstance)), &cfg); err != nil {
		return fmt.Errorf("bad %s: %w", envInstance, err)
	}
	if dir := os.Getenv(EnvInstanceProfile); dir != "" {
		if stop, err := startChildProfile(dir, cfg.ID); err == nil {
			defer stop()
		} else {
			fmt.Fprintln(os.Stderr, "lockbench instance:", err)
		}
	}
	bw := bufio.NewWriter(out)
	enc := gob.NewEncoder(bw)
	var encMu sync.Mutex
	send := func(m childMsg) error {
		encMu.Lock()
		defer encMu.Unlock()
		if err := enc.Encode(m); err != nil {
			return err
		}
		return bw.Flush()
	}
	ctx := context.Background()
	// An instance on an agent presents the agent's token to the
	// coordinator's store (the agent's environment is the process's).
	acc, err := store.DialToken(ctx, cfg.StoreAddr, os.Getenv(envStoreToken))
	var page *store.SeqPage
	if err == nil {
		page, err = childSeqPage()
		// The page outlives the client (defers run last first): Close
		// flushes the client's last frames, and until it has, the
		// client's reader may still answer a mark with a number taken
		// from the page; an unmapped page is a SIGSEGV that loses every
		// frame still queued.
		if page != nil {
			defer page.Close()
		}
		defer acc.Close()
	}
	if err == nil {
		if page != nil {
			acc.Sequence(page)
		} else if cfg.StoreArrive {
			acc.Arrive()
		}
		var inst *Instance
		inst, err = NewInstance(ctx, cfg.InstanceConfig, acc)
		if err == nil {
			return serveChild(ctx, inst, in, send)
		}
	}
	_ = send(childMsg{Kind: "error", Err: err.Error(), Lost: errors.Is(err, strategies.ErrAdapterLost)})
	return err
}

// startChildProfile profiles this instance process's CPU into dir until
// stop is called (EnvInstanceProfile).
func startChildProfile(dir string, id int) (stop func(), err error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("instance-%d-%d.pprof", id, os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func serveChild(ctx context.Context, inst *Instance, in io.Reader, send func(childMsg) error) error {
	if err := send(childMsg{Kind: "ready"}); err != nil {
		return err
	}
	inst.Start(ctx)
	// One set for every report, emptied after each: a new one each time
	// was four histograms' counts (some 180 KB each) allocated four times
	// a second.
	set := results.NewPhaseSet()
	stats := func(kind string) error {
		defer set.Reset()
		inst.Swap(set)
		m := childMsg{Kind: kind, Counts: inst.Counts(), History: inst.DrainHistory(nil)}
		for _, h := range set {
			m.Hists = append(m.Hists, sparseOf(h))
		}
		// The instance keeps its outcomes for the whole run; send what
		// was added since the last stats.
		for _, h := range inst.Outcomes() {
			m.Outcomes = append(m.Outcomes, sparseOf(h))
			h.Reset()
		}
		return send(m)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(statsEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if stats("stats") != nil {
					return
				}
			}
		}
	}()
	// EOF: the coordinator is done with us.
	_ = readDeliveries(in, func(d Delivery) { _ = inst.Deliver(ctx, d) })
	err := inst.Stop()
	close(stop)
	wg.Wait()
	if serr := stats("done"); serr != nil {
		return serr
	}
	return err
}
