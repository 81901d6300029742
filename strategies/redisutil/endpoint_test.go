package redisutil

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/strategies"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Endpoint
		wantErr  bool
	}{
		// host:port: no login, no TLS.
		{"host:port", "127.0.0.1:6379", Endpoint{Addr: "127.0.0.1:6379"}, false},
		// An ACL user over TLS.
		{"rediss acl", "rediss://app:pw@10.0.0.1:6380", Endpoint{Addr: "10.0.0.1:6380", User: "app", Password: "pw", HasPassword: true, TLS: true}, false},
		// A password for the default user.
		{"default user", "redis://:pw@h:6379", Endpoint{Addr: "h:6379", Password: "pw", HasPassword: true}, false},
		// A percent-encoded password is decoded.
		{"encoded", "rediss://u:p%40ss@h:6380/0", Endpoint{Addr: "h:6380", User: "u", Password: "p@ss", HasPassword: true, TLS: true}, false},
		// A URL without a port, another scheme, a database other than 0,
		// a query: refused.
		{"no port", "redis://h", Endpoint{}, true},
		{"scheme", "http://h:1", Endpoint{}, true},
		{"database", "redis://h:1/3", Endpoint{}, true},
		{"query", "rediss://h:1?ca=/x", Endpoint{}, true},
		{"not host:port", "h", Endpoint{}, true},
	} {
		got, err := ParseEndpoint(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: ParseEndpoint(%q) = %+v, %v; want %+v, error %v", tc.name, tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestEndpointErrorsHidePasswords checks that no refusal quotes a password.
func TestEndpointErrorsHidePasswords(t *testing.T) {
	for _, in := range []string{"rediss://u:s3cret@h", "u:s3cret@h:1:2", "redis://u:s3cret@h:1/9", "redis://u:s3cret@h:1?x=1", "ftp://u:s3cret@h:1", "rediss://u:s3cret@h:1%zz"} {
		_, err := ParseEndpoint(in)
		if err == nil {
			t.Errorf("ParseEndpoint(%q): got no error; want one", in)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseEndpoint(%q): error %q shows the password", in, err)
		}
	}
	for _, in := range []string{"rediss://u:s3cret@", "ftp://u:s3cret@m"} {
		if _, err := ParseMaster(in); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseMaster(%q): got %v; want an error without the password", in, err)
		}
	}
}

func TestClientOptions(t *testing.T) {
	for _, tc := range []struct {
		name, entry, password    string
		wantUser, wantPW, wantAt string
		wantTLS                  bool
	}{
		// host:port takes Config.RedisPassword for the default user.
		{"host:port", "h:1", "cfgpw", "", "cfgpw", "h:1", false},
		// A URL's own login wins over Config.RedisPassword.
		{"url login", "rediss://app:pw@h:2", "cfgpw", "app", "pw", "h:2", true},
		// A URL without a login falls back to Config.RedisPassword.
		{"url without login", "rediss://h:3", "cfgpw", "", "cfgpw", "h:3", true},
	} {
		o, err := ClientOptions(tc.entry, strategies.Config{RedisPassword: tc.password})
		if err != nil {
			t.Errorf("%s: ClientOptions(%q): %v", tc.name, tc.entry, err)
			continue
		}
		if o.Username != tc.wantUser || o.Password != tc.wantPW || o.Addr != tc.wantAt || (o.TLSConfig != nil) != tc.wantTLS {
			t.Errorf("%s: got user %q password %q addr %q TLS %v; want %q %q %q %v", tc.name, o.Username, o.Password, o.Addr, o.TLSConfig != nil, tc.wantUser, tc.wantPW, tc.wantAt, tc.wantTLS)
		}
	}
	if _, err := ClientOptions("rediss://h:1", strategies.Config{RedisCACert: "/nonexistent/ca.pem"}); err == nil {
		t.Error("ClientOptions with a missing CA file: got no error; want one")
	}
}

func TestFailoverOptions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       strategies.Config
		wantErr   bool
		wantTLS   bool
		sUser     string
		sPW       string
		mName     string
		mUser     string
		mPW       string
		wantAddrs string
	}{
		// Plain Sentinels, a master name and Config.RedisPassword for the primary.
		{name: "plain", cfg: strategies.Config{RedisSentinels: []string{"h:1", "h:2"}, RedisMaster: "m", RedisPassword: "pw"},
			mName: "m", mPW: "pw", wantAddrs: "h:1,h:2"},
		// TLS Sentinels with their own ACL user; the primary's login from
		// a URL-form master.
		{name: "tls and logins", cfg: strategies.Config{RedisSentinels: []string{"rediss://s:spw@h:1", "rediss://s:spw@h:2"}, RedisMaster: "rediss://app:apw@m", RedisPassword: "ignored"},
			wantTLS: true, sUser: "s", sPW: "spw", mName: "m", mUser: "app", mPW: "apw", wantAddrs: "h:1,h:2"},
		// One client needs one TLS setting and one login for all Sentinels.
		{name: "mixed TLS", cfg: strategies.Config{RedisSentinels: []string{"rediss://h:1", "h:2"}}, wantErr: true},
		{name: "mixed login", cfg: strategies.Config{RedisSentinels: []string{"redis://a:x@h:1", "redis://b:x@h:2"}}, wantErr: true},
	} {
		o, err := FailoverOptions(tc.cfg)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: FailoverOptions: got %v; want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		got := []string{o.MasterName, o.Username, o.Password, o.SentinelUsername, o.SentinelPassword, strings.Join(o.SentinelAddrs, ",")}
		want := []string{tc.mName, tc.mUser, tc.mPW, tc.sUser, tc.sPW, tc.wantAddrs}
		if strings.Join(got, "|") != strings.Join(want, "|") || (o.TLSConfig != nil) != tc.wantTLS {
			t.Errorf("%s: got %q TLS %v; want %q TLS %v", tc.name, got, o.TLSConfig != nil, want, tc.wantTLS)
		}
	}
}
