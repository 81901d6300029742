// Package adaptertest is an adapter written in Go, for tests of the
// adapter protocol: a test binary re-executes itself as the adapter
// (Command), and Main, called first thing in its TestMain, runs it.
//
// The good adapter is a real lock on one Redis node: a script that sets
// the key, with a fencing token from INCR as its value, only when it is
// free; a compare-and-delete release and a
// compare-and-expire extend. The broken ones misbehave as the protocol's
// failure rules name: exit at once, print garbage, never answer.
package adaptertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvMode selects the adapter a re-executed test binary runs.
const EnvMode = "LOCKBENCH_TEST_ADAPTER"

// Modes of the test adapter.
const (
	// Good is a working non-blocking Redis adapter with tokens and extend.
	Good = "good"
	// Blocking is Good whose acquire waits up to timeout_ms and answers
	// cancel.
	Blocking = "blocking"
	// Losing is Good that sends a lost event right after each grant.
	Losing = "losing"
	// Exit exits at once, hello or not.
	Exit = "exit"
	// Garbage prints a line that is not the protocol.
	Garbage = "garbage"
	// Silent sends its hello and never answers.
	Silent = "silent"
	// Stall answers New's probe (a key starting lockbench-probe:) and
	// nothing else.
	Stall = "stall"
	// NoHello prints nothing and waits.
	NoHello = "nohello"
	// Chatty is Good that prints a debug line on stdout when it acquires
	// a payment's lock (not New's probe): an adapter's log line in the
	// protocol's stream, which lockbench must take for a lost adapter.
	Chatty = "chatty"
	// ChattyAll is Chatty that prints its debug line at every acquire,
	// New's probe too, as an adapter with a debug log does: it is lost
	// before the first payment.
	ChattyAll = "chatty-all"
)

// ExitMessage is what Exit says on standard error before it exits, with a
// secret lockbench must redact.
const ExitMessage = "adaptertest: cannot go on: password=hunter2 refused"

// Command returns the path, arguments and environment that re-execute the
// test binary as the adapter of mode.
func Command(mode string) (path string, env []string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, []string{EnvMode + "=" + mode}
}

// Main runs the adapter when the process was started as one (EnvMode set)
// and exits; otherwise it returns at once.
func Main() {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	os.Exit(run(mode))
}

func hello(mode string) string {
	blocking := mode == Blocking
	return fmt.Sprintf(`{"hello":"lockbench-adapter","protocol":1,"name":"go-test-%s","library":"go-redis","library_version":"9","backend":"redis","nodes":1,"lease":"ttl","capabilities":{"token":true,"extend":true,"blocking":%t}}`, mode, blocking)
}

func run(mode string) int {
	for _, a := range os.Args[1:] {
		if a == "--hello" {
			if mode == Exit {
				fmt.Fprintln(os.Stderr, ExitMessage)
				return 3
			}
			if mode == Garbage {
				fmt.Println("garbage, not json")
				return 0
			}
			if mode == NoHello {
				time.Sleep(time.Minute)
				return 0
			}
			fmt.Println(hello(mode))
			return 0
		}
	}
	switch mode {
	case Exit:
		fmt.Fprintln(os.Stderr, "adaptertest: starting")
		fmt.Fprintln(os.Stderr, ExitMessage)
		return 3
	case NoHello:
		time.Sleep(time.Minute)
		return 0
	}
	// A secret on stderr: lockbench must redact it in the adapter's log.
	fmt.Fprintln(os.Stderr, "adaptertest: started, password=s3cret-for-test")
	a := &adapter{mode: mode, out: bufio.NewWriter(os.Stdout), pending: map[int64]context.CancelFunc{}, locks: map[int64]lock{}}
	a.emit(hello(mode))
	if mode == Garbage {
		a.emit("password=hunter2 this is not the protocol")
	}
	addr := strings.Split(os.Getenv("LOCKBENCH_REDIS_ADDRS"), ",")[0]
	a.rdb = redis.NewClient(&redis.Options{Addr: addr, Password: os.Getenv("LOCKBENCH_REDIS_PASSWORD"),
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	in := bufio.NewScanner(os.Stdin)
	var wg sync.WaitGroup
	for in.Scan() {
		if mode == Silent {
			continue
		}
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "bad request %q\n", in.Text())
			continue
		}
		if mode == Stall && (r.Op != "acquire" || !strings.HasPrefix(r.Key, "lockbench-probe:")) && r.Lock == 0 {
			continue
		}
		if r.Op == "cancel" {
			a.mu.Lock()
			if cancel := a.pending[r.Target]; cancel != nil {
				cancel()
			}
			a.mu.Unlock()
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		a.mu.Lock()
		a.pending[r.ID] = cancel
		a.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			a.answer(ctx, r)
		}()
	}
	// stdin EOF: exit, as the protocol asks.
	wg.Wait()
	return 0
}

type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key"`
	TTLMs     int64  `json:"ttl_ms"`
	TimeoutMs int64  `json:"timeout_ms"`
	Lock      int64  `json:"lock"`
	Target    int64  `json:"target"`
}

type lock struct {
	key   string
	token int64
}

type adapter struct {
	mode    string
	rdb     *redis.Client
	omu     sync.Mutex
	out     *bufio.Writer
	mu      sync.Mutex
	pending map[int64]context.CancelFunc
	locks   map[int64]lock
}

func (a *adapter) emit(line string) {
	a.omu.Lock()
	defer a.omu.Unlock()
	a.out.WriteString(line + "\n")
	a.out.Flush()
}

func (a *adapter) reply(v map[string]any) {
	b, _ := json.Marshal(v)
	a.emit(string(b))
}

var (
	// acquireScript takes the token only with the lock, in one step: an
	// INCR before a separate SET NX lets a contender that was slow between
	// the two hold the lock with an older token than the holder before it.
	acquireScript = redis.NewScript(`if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
local t = redis.call("INCR", KEYS[2])
redis.call("SET", KEYS[1], t, "PX", ARGV[1])
return t`)
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	extendScript  = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
)

func (a *adapter) answer(ctx context.Context, r request) {
	defer func() {
		a.mu.Lock()
		delete(a.pending, r.ID)
		a.mu.Unlock()
	}()
	fail := func(err error) {
		class := "error"
		var ne net.Error
		switch {
		case errors.Is(err, context.Canceled):
			class = "cancelled"
		case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "refused"):
			class = "unavailable"
		case errors.As(err, &ne) && ne.Timeout():
			class = "timeout"
		}
		a.reply(map[string]any{"id": r.ID, "ok": false, "error": class, "message": err.Error()})
	}
	switch r.Op {
	case "acquire":
		if a.mode == ChattyAll || a.mode == Chatty && !strings.HasPrefix(r.Key, "lockbench-probe:") {
			a.emit("debug: acquiring " + r.Key)
		}
		deadline := time.Now().Add(time.Duration(r.TimeoutMs) * time.Millisecond)
		waited := false
		for {
			token, err := acquireScript.Run(ctx, a.rdb, []string{r.Key, "fence:" + r.Key}, r.TTLMs).Int64()
			if err != nil {
				fail(err)
				return
			}
			if token > 0 {
				if ctx.Err() != nil {
					// Granted after a cancel: released here, as the protocol asks.
					releaseScript.Run(context.Background(), a.rdb, []string{r.Key}, token)
					fail(context.Canceled)
					return
				}
				a.mu.Lock()
				a.locks[r.ID] = lock{r.Key, token}
				a.mu.Unlock()
				a.reply(map[string]any{"id": r.ID, "ok": true, "token": token, "waited": waited, "valid_ms": r.TTLMs})
				if a.mode == Losing {
					a.reply(map[string]any{"event": "lost", "lock": r.ID, "key": r.Key, "token": token})
				}
				return
			}
			if a.mode != Blocking || time.Now().After(deadline) {
				a.reply(map[string]any{"id": r.ID, "ok": false, "error": "not_acquired"})
				return
			}
			waited = true
			select {
			case <-ctx.Done():
				fail(context.Canceled)
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	case "release", "extend":
		a.mu.Lock()
		l, ok := a.locks[r.Lock]
		if r.Op == "release" {
			delete(a.locks, r.Lock)
		}
		a.mu.Unlock()
		if !ok {
			a.reply(map[string]any{"id": r.ID, "ok": false, "error": "not_owner"})
			return
		}
		var n int64
		var err error
		if r.Op == "release" {
			n, err = releaseScript.Run(ctx, a.rdb, []string{l.key}, l.token).Int64()
		} else {
			n, err = extendScript.Run(ctx, a.rdb, []string{l.key}, l.token, r.TTLMs).Int64()
		}
		switch {
		case err != nil:
			fail(err)
		case n == 0:
			a.reply(map[string]any{"id": r.ID, "ok": false, "error": "not_owner"})
		default:
			a.reply(map[string]any{"id": r.ID, "ok": true})
		}
	default:
		a.reply(map[string]any{"id": r.ID, "ok": false, "error": "error", "message": "unknown op " + r.Op})
	}
}
