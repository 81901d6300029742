package zklock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// lockPrefix starts the name of every lock znode:
// lock-GUID-NNNNNNNNNN, where ZooKeeper appends the 10-digit sequence
// number and the GUID is unique to one create (see create).
const lockPrefix = "lock-"

// Background clean-up retries from forgetBackoff up to forgetBackoffCap.
const (
	forgetBackoff    = 50 * time.Millisecond
	forgetBackoffCap = time.Second
)

// errNotSent is what a create returned that was never sent.
var errNotSent = errors.New("zklock: not sent")

// openACL lets anyone do anything: the servers are the benchmark's own.
var openACL = zk.WorldACL(zk.PermAll)

// node is one lock znode this strategy created.
type node struct {
	path string // parent + "/" + name
	name string
	seq  int64    // the sequence number ZooKeeper appended
	s    *session // the session it lives in
}

// escapeKey makes a lock key one znode name: path-escaped (a "/" would make
// it a path), and never "", "." or "..", which ZooKeeper refuses (nor what
// an escaped key could be: PathEscape never yields a bare "%" or "%2E").
func escapeKey(key string) string {
	switch e := url.PathEscape(key); e {
	case "":
		return "%"
	case ".", "..":
		return strings.ReplaceAll(e, ".", "%2E")
	default:
		return e
	}
}

// create creates our ephemeral sequential znode under parent, and parent
// (and the znodes above it) when the key is new. A create whose answer is lost
// may still have happened, and its znode would block the key for the session's
// life; so its name carries a GUID no other create uses (ZooKeeper's
// "protected" create, as in Curator), by which a clean-up finds and deletes it
// once the request is settled.
func (z *ZooKeeper) create(ctx context.Context, parent string) (*node, error) {
	guid := newGUID()
	prefix := parent + "/" + lockPrefix + guid + "-"
	for made := false; ; made = true {
		sid := z.conn.SessionID()
		path, opErr := "", errNotSent
		done, err := z.do(ctx, func() error {
			path, opErr = z.conn.Create(prefix, z.owner, zk.FlagEphemeral|zk.FlagSequence, openACL)
			return opErr
		})
		switch {
		case err == nil:
			n := &node{path: path, name: path[len(parent)+1:], s: z.session(sid)}
			seq, ok := seqOf(n.name)
			n.seq = seq
			switch {
			case z.conn.SessionID() != sid || n.s == nil:
				// The client changed sessions meanwhile: which one the
				// znode lives in, and so what its Deadline is, is unknown.
				go z.forget(n.path)
				return nil, errSessionLost
			case !ok:
				go z.forget(n.path)
				return nil, fmt.Errorf("zklock: create answered %q, not a sequential znode", path)
			}
			return n, nil
		case errors.Is(err, zk.ErrNoNode) && !made:
			if err := z.makeParents(ctx, parent); err != nil {
				return nil, err
			}
		case definite(err) || errors.Is(err, errNoSession):
			return nil, classify(ctx, "create in "+parent, err)
		default:
			go z.sweep(parent, guid, done, func() (string, error) { return path, opErr })
			return nil, classify(ctx, "create in "+parent, err)
		}
	}
}

// makeParents creates parent and the znodes above it, persistent and
// empty. They stay for good: a key's parent counts the sequence numbers of
// its lock znodes, which are the key's fencing tokens, so a parent deleted
// and created again would hand out again tokens it handed out before (a
// container znode, which the server deletes once empty, would do that).
func (z *ZooKeeper) makeParents(ctx context.Context, parent string) error {
	err := z.mkdir(ctx, parent) // the ancestors exist but for the first key
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	for i := 1; i < len(parent); i++ {
		if parent[i] == '/' {
			if err := z.mkdir(ctx, parent[:i]); err != nil {
				return err
			}
		}
	}
	return z.mkdir(ctx, parent)
}

// mkdir creates the persistent znode path unless it exists.
func (z *ZooKeeper) mkdir(ctx context.Context, path string) error {
	_, err := z.do(ctx, func() error {
		_, err := z.conn.Create(path, nil, 0, openACL)
		return err
	})
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return classify(ctx, "create "+path, err)
}

// seqOf returns the sequence number ZooKeeper appended to a lock znode's
// name, and false for a name that is not a lock znode's.
func seqOf(name string) (int64, bool) {
	i := strings.LastIndexByte(name, '-')
	if !strings.HasPrefix(name, lockPrefix) || i < 0 {
		return 0, false
	}
	seq, err := strconv.ParseInt(name[i+1:], 10, 64)
	return seq, err == nil
}

// predecessor returns, among the lock znodes in children, the name of the
// one with the largest sequence number below seq, ours: "" when ours is the
// lowest, and holds the lock. mine reports whether ours, name, is among
// children at all.
func predecessor(children []string, name string, seq int64) (pred string, mine bool) {
	best := int64(-1)
	for _, c := range children {
		if c == name {
			mine = true
			continue
		}
		if s, ok := seqOf(c); ok && s < seq && s > best {
			best, pred = s, c
		}
	}
	return pred, mine
}

// forget deletes the znode at path in the background of a failed,
// abandoned or unanswered Acquire or Release, retrying until the server
// confirms that it is gone, or z is closed (the znode then goes with the
// session). A znode of a session that expired is gone already, and the
// first answer says so.
func (z *ZooKeeper) forget(path string) {
	for backoff := forgetBackoff; ; backoff = min(2*backoff, forgetBackoffCap) {
		ctx, cancel := context.WithTimeout(context.Background(), z.opTimeout)
		done, err := z.do(ctx, func() error { return z.conn.Delete(path, -1) })
		cancel()
		if err == nil || definite(err) { // deleted, gone (ErrNoNode), or never to be
			return
		}
		if !z.pause(done, backoff) {
			return
		}
	}
}

// sweep deletes the znode of a create whose answer did not arrive in time,
// once result (what the create returned) may be read, after done: the
// znode the create made, or, when the answer was lost with the connection,
// the one whose name has guid, if any.
func (z *ZooKeeper) sweep(parent, guid string, done <-chan struct{}, result func() (string, error)) {
	select {
	case <-done:
	case <-z.closed:
		return
	}
	path, err := result()
	switch {
	case err == nil:
		z.forget(path)
		return
	case !errors.Is(err, zk.ErrConnectionClosed):
		return // refused, never sent (errNotSent), or sent in a session that expired
	}
	for backoff := forgetBackoff; ; backoff = min(2*backoff, forgetBackoffCap) {
		var children []string
		ctx, cancel := context.WithTimeout(context.Background(), z.opTimeout)
		done, err := z.read(ctx, func() (err error) {
			children, _, err = z.conn.Children(parent)
			return err
		})
		cancel()
		switch {
		case err == nil:
			for _, c := range children {
				if strings.HasPrefix(c, lockPrefix+guid+"-") {
					z.forget(parent + "/" + c)
				}
			}
			return
		case definite(err):
			return
		}
		if !z.pause(done, backoff) {
			return
		}
	}
}

// pause waits until the request behind done has returned and then for d,
// and reports false when z is closed first.
func (z *ZooKeeper) pause(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
	case <-z.closed:
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-z.closed:
		return false
	}
}

// newGUID returns 32 random hex digits.
func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
