package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
)

// composeFile is the compose file lockbench ships, at the repository's top.
const composeFile = "../docker-compose.yml"

// warnings collects what compose-go logs at warning level or above (an
// obsolete key, a variable without a value): strict loading fails on them
// as on errors.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (w *warnings) Fire(e *logrus.Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, e.Message)
	return nil
}

// loadStrict loads path as docker compose would (schema validation,
// interpolation, consistency checks), with every profile enabled and no
// environment, so that the file stands on its own; a warning is an error.
func loadStrict(t *testing.T, path string) *types.Project {
	t.Helper()
	w := &warnings{}
	log := logrus.StandardLogger()
	log.AddHook(w)
	t.Cleanup(func() { log.ReplaceHooks(logrus.LevelHooks{}) })

	ctx := context.Background()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	details, err := loader.LoadConfigFiles(ctx, []string{abs}, filepath.Dir(abs))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	details.Environment = types.Mapping{}
	p, err := loader.LoadWithContext(ctx, *details, func(o *loader.Options) {
		o.SetProjectName("lockbench", true)
		o.Profiles = []string{"*"}
	})
	if err != nil {
		t.Fatalf("%s does not load as a compose file: %v", path, err)
	}
	for _, m := range w.msgs {
		t.Errorf("%s: compose-go warns: %s", path, m)
	}
	return p
}

// The shipped compose file is valid by the Compose Specification, and
// every port it publishes binds to 127.0.0.1 only: the servers are for
// benchmarking, without passwords worth the name, and must not be
// reachable from the network.
func TestComposeFile(t *testing.T) {
	p := loadStrict(t, composeFile)
	if len(p.Services) == 0 {
		t.Fatalf("%s has no services", composeFile)
	}
	for _, problem := range exposures(p) {
		t.Error(problem)
	}
}

// exposures lists what in p is reachable from beyond the machine: a port
// published on another address than 127.0.0.1 (no address is every
// address; a port without a host port is published on a random one), or a
// service on the host's network.
func exposures(p *types.Project) []string {
	var out []string
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		if s.NetworkMode == "host" {
			out = append(out, fmt.Sprintf("service %s: network_mode host exposes every port it opens; want published ports on 127.0.0.1", name))
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				out = append(out, fmt.Sprintf("service %s: port %s:%d binds to %q; want 127.0.0.1", name, port.Published, port.Target, port.HostIP))
			}
		}
	}
	return out
}

// The checks catch what they are for: a port on every address, in a
// profile too, and a file with an unknown key.
func TestComposeChecksFail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	open := write("open.yml", "services:\n"+
		"  redis:\n    image: redis:7.2\n    ports: [\"7001:6379\", \"127.0.0.1:7002:6379\", \"6379\"]\n"+
		"  debug:\n    image: redis:7.2\n    profiles: [debug]\n    ports: [\"0.0.0.0:9000:6379\"]\n")
	got := exposures(loadStrict(t, open))
	if len(got) != 3 {
		t.Errorf("exposures of %s: %q; want the three ports not on 127.0.0.1 (one in a profile)", open, got)
	}

	bad := write("bad.yml", "services:\n  redis:\n    image: redis:7.2\n    portz: [\"127.0.0.1:7001:6379\"]\n")
	details, err := loader.LoadConfigFiles(context.Background(), []string{bad}, dir)
	if err != nil {
		t.Fatal(err)
	}
	details.Environment = types.Mapping{}
	if _, err := loader.LoadWithContext(context.Background(), *details, func(o *loader.Options) { o.SetProjectName("x", true) }); err == nil {
		t.Errorf("%s (an unknown key) loaded; want a validation error", bad)
	}
}
