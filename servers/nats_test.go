package servers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/strategies"
)

// A NATS server started by lockbench serves JetStream on loopback, is the
// queue strategy's one node, and comes back after Kill and Start, at the
// same URL.
func TestNATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real NATS server; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Needs{NATS: true}, Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Stop()
	n := c.NATS()
	if n == nil || !strings.HasPrefix(n.URL, "nats://127.0.0.1:") {
		t.Fatalf("NATS: got %+v; want a server at nats://127.0.0.1:port", n)
	}
	ep := c.Endpoints()
	if ep.NATSURL != n.URL {
		t.Errorf("Endpoints().NATSURL: got %q; want %q", ep.NATSURL, n.URL)
	}
	var line string
	for _, l := range ep.Env() {
		if strings.HasPrefix(l, EnvNATSURL+"=") {
			line = l
		}
	}
	if line != EnvNATSURL+"="+n.URL {
		t.Errorf("Env: got %q; want %s=%s", line, EnvNATSURL, n.URL)
	}
	target, err := TargetFor(strategies.Need{Backend: strategies.BackendNATS, Nodes: 1}, ep, c)
	if err != nil {
		t.Fatalf("TargetFor: %v", err)
	}
	if !target.Local() || target.Len() != 1 || target.Config.NATSURL != n.URL {
		t.Errorf("target: got local %v, %d node(s), URL %q; want lockbench's one server", target.Local(), target.Len(), target.Config.NATSURL)
	}
	if addr, err := target.Addr(0); err != nil || "nats://"+addr != n.URL {
		t.Errorf("Addr(0): got %q, %v; want the server's host:port", addr, err)
	}
	routed, err := target.Reroute(target.Config, 0, "127.0.0.1:1")
	if err != nil || routed.NATSURL != "nats://127.0.0.1:1" {
		t.Errorf("Reroute: got %q, %v; want nats://127.0.0.1:1", routed.NATSURL, err)
	}
	if !Forgets(strategies.BackendNATS) || !n.Volatile() {
		t.Errorf("Forgets/Volatile: got false; want true (a restart loses the store)")
	}
	if err := n.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := natsReady(ctx, n.addr); err == nil {
		t.Errorf("after Kill: the server still answers")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start again: %v", err)
	}
	if err := natsReady(ctx, n.addr); err != nil {
		t.Errorf("after Start: %v; want JetStream served", err)
	}
}

// NATS URLs keep their credentials when rerouted, and Redact hides a
// password in them.
func TestNATSURLs(t *testing.T) {
	for _, c := range []struct {
		in, addr, want string
	}{
		// user and password are kept
		{"nats://u:secret@10.0.0.1:4222", "127.0.0.1:9", "nats://u:secret@127.0.0.1:9"},
		// a token is kept
		{"nats://tok@10.0.0.1:4222", "127.0.0.1:9", "nats://tok@127.0.0.1:9"},
		// host:port alone
		{"10.0.0.1:4222", "127.0.0.1:9", "127.0.0.1:9"},
	} {
		got, err := replaceNATSHost(c.in, c.addr)
		if err != nil || got != c.want {
			t.Errorf("replaceNATSHost(%q): got %q, %v; want %q", Redact(c.in), Redact(got), err, Redact(c.want))
		}
	}
	if got := Redact(EnvNATSURL + "=nats://u:secret@h:4222"); strings.Contains(got, "secret") {
		t.Errorf("Redact: got %q; want the password hidden", got)
	}
	if _, err := hostOfNATSURL("nats://u:secret@h"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("hostOfNATSURL without a port: got %v; want an error that does not quote the URL", err)
	}
}
