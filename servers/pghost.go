package servers

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// addr is where the server's clients reach it: Options.Host, or 127.0.0.1.
func (p *Postgres) addr() string {
	if p.host != "" {
		return p.host
	}
	return "127.0.0.1"
}

// listenAddresses is the server's listen_addresses: 127.0.0.1, and
// Options.Host beside it when set (the coordinator's own tools keep
// loopback; instances on agents come in on Host).
func (p *Postgres) listenAddresses() string {
	if p.host == "" || p.host == "127.0.0.1" {
		return "127.0.0.1"
	}
	return "127.0.0.1," + p.host
}

// admitHostSubnet adds to pg_hba.conf a rule admitting the clients on
// Options.Host's subnet (the agents beside it, on the far ends of their
// veth pairs or on the LAN) the way initdb's rules admit loopback: trust,
// or with Options.Secure a scram-sha-256 password. Without Host it does
// nothing: initdb's loopback rules are all a local run needs.
func (p *Postgres) admitHostSubnet() error {
	if p.host == "" {
		return nil
	}
	subnet, err := hostSubnet(p.host)
	if err != nil {
		return err
	}
	method := "trust"
	if p.secure.auth() {
		method = "scram-sha-256"
	}
	f, err := os.OpenFile(filepath.Join(p.dataDir, "pg_hba.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "\n# lockbench: clients on Options.Host's subnet (agents)\nhost all all %s %s\n", subnet, method)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// hostSubnet is the network of this machine's interface that holds host:
// the subnet its clients (agents) connect from.
func hostSubnet(host string) (*net.IPNet, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("servers: host %q: want an IP address", host)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.Contains(ip) {
			return &net.IPNet{IP: n.IP.Mask(n.Mask), Mask: n.Mask}, nil
		}
	}
	return nil, fmt.Errorf("servers: host %s is on no interface of this machine", host)
}
