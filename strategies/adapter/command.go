package adapter

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
	"unsafe"

	"github.com/lockbench/lockbench/strategies"
)

// Command is how to start an adapter.
type Command struct {
	// Path is the program; Args its arguments.
	Path string
	Args []string
	// Dir is the working directory; empty: lockbench's.
	Dir string
	// Env holds environment variables added to lockbench's own.
	Env []string
	// Unset names variables of lockbench's environment the adapter does
	// not get (Env may still set them).
	Unset []string
}

// String is the command as typed: the path and its arguments.
func (c Command) String() string {
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// errorf is an error naming the adapter, on one line.
func (c Command) errorf(format string, args ...any) error {
	msg := fmt.Sprintf("adapter %s: "+format, append([]any{c}, args...)...)
	return fmt.Errorf("%s", oneLine(redact(msg)))
}

// Environment variables of the scenario, given to each adapter besides the
// servers' endpoints (EndpointEnv).
const (
	EnvTTL            = "LOCKBENCH_ADAPTER_TTL_MS"
	EnvAcquireTimeout = "LOCKBENCH_ADAPTER_ACQUIRE_TIMEOUT_MS"
	EnvWorkers        = "LOCKBENCH_ADAPTER_WORKERS"
	EnvInstance       = "LOCKBENCH_ADAPTER_INSTANCE"
)

// environ is the adapter's environment: lockbench's less c.Unset and
// the variables that make a lockbench binary a child (an instance process
// passes them on, and an adapter linking lockbench's packages would take
// them), c.Env, and, for a config, its endpoints as `lockbench up` prints
// them and the scenario's variables.
func (c Command) environ(cfg *strategies.Config) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		child := name == "LOCKBENCH_CHILD" || strings.HasPrefix(name, "LOCKBENCH_CHILD_")
		if !child && !slices.Contains(c.Unset, name) {
			env = append(env, kv)
		}
	}
	env = append(env, c.Env...)
	if cfg == nil {
		return env
	}
	if EndpointEnv != nil {
		env = append(env, EndpointEnv(*cfg)...)
	}
	return append(env,
		EnvTTL+"="+strconv.FormatInt(cfg.TTL.Milliseconds(), 10),
		EnvAcquireTimeout+"="+strconv.FormatInt(cfg.AcquireTimeout.Milliseconds(), 10),
		EnvWorkers+"="+strconv.Itoa(max(cfg.Workers, 1)),
		EnvInstance+"="+strings.TrimPrefix(cfg.Owner, "instance-"),
	)
}

// childAttr makes an adapter die with the thread that started it
// (SIGKILL), so that a killed lockbench leaves none behind. The adapter
// stays in its parent's process group, on purpose: stopping an instance
// process's group (the pause fault) stops its adapter with it. Except in
// the terminal's foreground group (instances run as goroutines of the
// lockbench typed there), where Ctrl-C would kill every adapter before
// lockbench stops its instances in order: there it gets a group of its
// own, and dies with lockbench or when its instance closes it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: inForeground()}
}

// inForeground reports whether this process's group is the foreground group
// of the terminal on its standard input, output or error.
func inForeground() bool {
	for fd := 0; fd <= 2; fd++ {
		var pgrp int32
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp)))
		if errno == 0 {
			return int(pgrp) == syscall.Getpgrp()
		}
	}
	return false
}

// EndpointEnv and Redact are package servers' (set by its init, since
// servers sits above the strategies): a config's servers as the
// LOCKBENCH_* variables `lockbench up` prints, and the redaction of
// passwords all of lockbench's output goes through. A program that runs
// adapters imports servers/adapterenv, which sets them; without it an
// adapter refuses to start.
var (
	EndpointEnv func(strategies.Config) []string
	Redact      func(string) string
)

// redact hides passwords in what an adapter prints.
func redact(s string) string {
	if Redact == nil {
		return s
	}
	return Redact(s)
}

// oneLine replaces line breaks with blanks.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
}

// maxLine bounds a protocol line: 1 MiB.
const maxLine = 1 << 20

// truncate cuts b to at most n bytes, on a rune boundary.
func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for len(b) > 0 && !utf8.Valid(b[len(b)-1:]) && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return b
}

// quoteLine quotes a line an adapter printed, cut short and redacted, for
// an error message.
func quoteLine(b []byte) string {
	q := strconv.Quote(redact(string(truncate(b, 80))))
	if len(b) > 80 {
		q += "…"
	}
	return q
}
