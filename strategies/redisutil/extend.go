package redisutil

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// ExtendScript sets the expiry of KEYS[1] to ARGV[2] milliseconds from now if
// it still holds ARGV[1], the extending lease's owner value, and that
// lengthens it (a key without an expiry keeps none); it returns 1 when the key
// holds ARGV[1] and 0 otherwise. GET and PEXPIRE are one atomic step, as
// ReleaseScript's GET and DEL are: in between, the lock could expire and be
// taken, and PEXPIRE would extend the new holder's lock. Never shortening
// (PEXPIRE GT does it from Redis 7.0) keeps a lease's Deadline conservative
// when an Extend's reply is lost.
var ExtendScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local pttl = redis.call("PTTL", KEYS[1])
if pttl >= 0 and pttl < tonumber(ARGV[2]) then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 1
`)

// ExtendTTL returns ttl truncated to whole milliseconds, PEXPIRE's
// resolution, and an error when that leaves nothing: PEXPIRE 0 would delete
// the lock.
func ExtendTTL(key string, ttl time.Duration) (time.Duration, error) {
	ms := ttl.Truncate(time.Millisecond)
	if ms <= 0 {
		return 0, fmt.Errorf("extend %s: TTL %v is below PEXPIRE's 1ms resolution", key, ttl)
	}
	return ms, nil
}

// Extend makes the lock on key on c live at least ttl (whole milliseconds)
// from now if it still holds value. It returns strategies.ErrNotOwner,
// changing nothing, when the lock expired or belongs to someone else. Like
// Release, the script runs by its SHA, falling back to EVAL.
func Extend(ctx context.Context, c *redis.Client, key, value string, ttl time.Duration) error {
	ms, err := ExtendTTL(key, ttl)
	if err != nil {
		return err
	}
	n, err := ExtendScript.Run(ctx, c, []string{LockKey(key)}, value, ms.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("extend %s: %w", key, Classify(ctx, c.Options().Addr, err))
	}
	if n == 0 {
		return strategies.ErrNotOwner
	}
	return nil
}
