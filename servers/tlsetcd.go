package servers

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdAuthTimeout bounds turning auth on in a started etcd cluster.
const etcdAuthTimeout = 10 * time.Second

// enableEtcdAuth turns on authentication in the cluster's etcd
// (Options.Secure with a password): the root user, which etcd requires
// before auth is enabled, and Secure.User, both with Secure.Password and
// the root role. Auth is kept in the data directory, so a restarted member
// has it too.
func (c *Cluster) enableEtcdAuth(ctx context.Context) error {
	sec := c.opts.Secure
	tc, err := sec.clientTLS()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, etcdAuthTimeout)
	defer cancel()
	var eps []string
	for _, m := range c.Etcd {
		eps = append(eps, m.ClientURL)
	}
	cl, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: tc, DialTimeout: etcdAuthTimeout, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("servers: etcd auth: %w", err)
	}
	defer cl.Close()
	users := []string{"root"}
	if u := sec.user(); u != "root" {
		users = append(users, u)
	}
	for _, u := range users {
		if _, err := cl.UserAdd(ctx, u, sec.Password); err != nil {
			return fmt.Errorf("servers: etcd auth: add user %s: %w", u, err)
		}
		if _, err := cl.UserGrantRole(ctx, u, "root"); err != nil {
			return fmt.Errorf("servers: etcd auth: grant root to %s: %w", u, err)
		}
	}
	if _, err := cl.AuthEnable(ctx); err != nil {
		return fmt.Errorf("servers: etcd auth: enable: %w", err)
	}
	return nil
}
