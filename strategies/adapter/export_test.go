package adapter

// BuiltinHello is the hello the registry entry of built-in name is made of.
func BuiltinHello(name string) string { return builtins[name].hello }

// Builtins names the shipped adapters.
func Builtins() []string {
	var names []string
	for name := range builtins {
		names = append(names, name)
	}
	return names
}

// Pid is the adapter process's pid.
func (s *Strategy) Pid() int { return s.p.c.Process.Pid }

// Environ is the environment c's adapter gets outside a run (its --hello).
func (c Command) Environ() []string { return c.environ(nil) }
