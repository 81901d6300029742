package redisutil

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/strategies"
)

// KeyPrefix is prepended to a lock key to name its Redis key, so lock keys
// never collide with other data on the node.
const KeyPrefix = "lock:"

// LockKey returns the Redis key that holds the lock on key.
func LockKey(key string) string { return KeyPrefix + key }

// ReleaseScript deletes KEYS[1] only if it still holds ARGV[1], the owner
// value of the lease releasing it, and returns the number of keys deleted.
// GET and DEL must be one atomic step: between a separate GET and DEL the
// lock can expire and be taken by someone else, whose lock the DEL would
// then delete (a holder whose lock expired must not delete its successor's).
var ReleaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// Release deletes the lock on key from c if it still holds value. It returns
// strategies.ErrNotOwner, deleting nothing, when the lock expired or belongs
// to someone else. The script runs by its SHA (EVALSHA), falling back to EVAL
// when the node's script cache lost it (a restart).
func Release(ctx context.Context, c *redis.Client, key, value string) error {
	return release(ctx, c, key, []string{LockKey(key)}, value)
}

// release is Release with the script's KEYS, key's name in Redis, made.
func release(ctx context.Context, c *redis.Client, key string, keys []string, value string) error {
	n, err := ReleaseScript.Run(ctx, c, keys, value).Int64()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, Classify(ctx, c.Options().Addr, err))
	}
	if n == 0 {
		return strategies.ErrNotOwner
	}
	return nil
}

// OwnerValue returns a value no other lease will ever write: owner (the
// instance, Config.Owner) followed by 128 random bits. It is unique per
// acquisition, not per instance, so two workers of one instance cannot
// release each other's locks.
func OwnerValue(owner string) string {
	return owner + ":" + rand.Text()
}
