package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
)

// command is one subcommand: its name, synopsis and summary for the usage
// text, details for its -h (optional), and setup, which registers the
// command's own flags and returns the action that runs with the positional
// arguments.
type command struct {
	name     string
	synopsis string
	summary  string
	details  string
	setup    func(fs *flag.FlagSet) action
	// noTimeout: -timeout does not bound the whole command (serve bounds
	// only its connection with it).
	noTimeout bool
}

// action runs a command with its positional arguments. It checks them
// before it calls s.provider, so that bad input never contacts Cosmos DB.
type action func(ctx context.Context, s *session, args []string) error

// commands are the subcommands in the order the usage text lists them.
var commands = []command{
	listCommand, showCommand, historyCommand, treeCommand,
	queuesCommand, metricsCommand, deleteCommand, pruneCommand, exportCommand,
	serveCommand,
}

// commonFlags are the connection and output flags every command accepts,
// before or after its name.
type commonFlags struct {
	endpoint, key       string
	database, container string
	json                bool
	timeout             time.Duration
	caCert              string
	insecure            bool
	verbose             bool
}

// register adds the common flags to fs with c's current values as their
// defaults, so that flags given before the command survive the command's
// own parse.
func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.endpoint, "endpoint", c.endpoint, "account endpoint (default $"+cdb.EnvEndpoint+")")
	fs.StringVar(&c.key, "key", c.key, "account key (default $"+cdb.EnvKey+")")
	fs.StringVar(&c.database, "database", c.database, "database (default $"+cdb.EnvDatabase+", else "+cdb.DefaultDatabase+")")
	fs.StringVar(&c.container, "container", c.container, "container (default $"+cdb.EnvContainer+", else "+cdb.DefaultContainer+")")
	fs.BoolVar(&c.json, "json", c.json, "print JSON instead of tables")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "give up after this long")
	fs.StringVar(&c.caCert, "ca-cert", c.caCert, "trust this PEM certificate (cdb-emulator -cert-out)")
	fs.BoolVar(&c.insecure, "insecure", c.insecure, "skip TLS certificate verification (local emulators only)")
	fs.BoolVar(&c.verbose, "v", c.verbose, "report the Cosmos DB requests and request units (RU) the command cost, on stderr; print long ids whole in tables")
}

// cliError is an error with the exit status it ends the command with.
type cliError struct {
	code int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

func usagef(format string, a ...any) error {
	return &cliError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

func notFoundf(format string, a ...any) error {
	return &cliError{code: exitNotFound, msg: fmt.Sprintf(format, a...)}
}

func connectf(format string, a ...any) error {
	return &cliError{code: exitConnect, msg: fmt.Sprintf(format, a...)}
}

func failedf(format string, a ...any) error {
	return &cliError{code: exitFailed, msg: fmt.Sprintf(format, a...)}
}

// exitCode returns err's exit status: its cliError's, else exitFailed.
func exitCode(err error) int {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitFailed
}

// run is the whole command: it parses args, runs the command and returns
// the exit status; results go to env.stdout, errors and prompts to
// env.stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := cmdIO{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	err := dispatch(ctx, args, env)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintln(stderr, "cdb-admin:", err)
	return exitCode(err)
}

// dispatch parses the common flags, finds the command, parses its flags
// and runs it.
func dispatch(ctx context.Context, args []string, env cmdIO) error {
	c := commonFlags{
		endpoint: env.getenv(cdb.EnvEndpoint), key: env.getenv(cdb.EnvKey),
		database: env.getenv(cdb.EnvDatabase), container: env.getenv(cdb.EnvContainer),
		timeout: time.Minute,
	}
	global := flag.NewFlagSet("cdb-admin", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	c.register(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(env.stdout)
			return err
		}
		return usagef("%v (cdb-admin -h lists the flags and commands)", err)
	}
	if global.NArg() == 0 {
		printUsage(env.stderr)
		return usagef("no command given")
	}
	name := global.Arg(0)
	var cmd *command
	for i := range commands {
		if commands[i].name == name {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		if name == "help" {
			printUsage(env.stdout)
			return nil
		}
		return usagef("unknown command %q (commands: %s)", name, commandNames())
	}
	fs := flag.NewFlagSet("cdb-admin "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.register(fs)
	act := cmd.setup(fs)
	positional, err := parseInterspersed(fs, global.Args()[1:])
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(env.stdout)
		fmt.Fprintf(env.stdout, "usage: cdb-admin %s %s\n  %s\n", name, cmd.synopsis, cmd.summary)
		if cmd.details != "" {
			fmt.Fprintf(env.stdout, "\n%s\n", cmd.details)
		}
		fmt.Fprintf(env.stdout, "\nflags:\n")
		fs.PrintDefaults()
		return err
	}
	if err != nil {
		return usagef("%s: %v (usage: cdb-admin %s %s)", name, err, name, cmd.synopsis)
	}
	if c.timeout <= 0 {
		return usagef("-timeout must be positive, not %v", c.timeout)
	}
	if !cmd.noTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	s := &session{flags: c, io: env}
	defer s.close()
	return act(ctx, s, positional)
}

// parseInterspersed parses fs over args, allowing flags after positional
// arguments ("history inst-1 -execution 2"), and returns the positional
// arguments in order. After "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// commandNames lists the command names, comma separated.
func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// printUsage writes the synopsis of every command and the common flags.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: cdb-admin [flags] <command> [command flags] [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", c.name, c.synopsis, c.summary)
	}
	fmt.Fprintln(w, "\nflags (before or after the command):")
	fs := flag.NewFlagSet("cdb-admin", flag.ContinueOnError)
	(&commonFlags{timeout: time.Minute}).register(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nexit status: 0 ok, 1 operation failed, 2 usage, 3 not found, 4 cannot connect, 5 aborted at the prompt")
	fmt.Fprintln(w, "cdb-admin <command> -h describes a command's own flags.")
}

// requireArgs checks the number of positional arguments of a command.
func requireArgs(cmd string, args []string, min, max int, synopsis string) error {
	switch {
	case len(args) < min:
		return usagef("%s: missing argument (usage: cdb-admin %s %s)", cmd, cmd, synopsis)
	case max >= 0 && len(args) > max:
		return usagef("%s: unexpected argument %q (usage: cdb-admin %s %s)", cmd, args[max], cmd, synopsis)
	}
	for _, a := range args {
		if a == "" {
			return usagef("%s: an instance id must not be empty", cmd)
		}
	}
	return nil
}

// uniqueSorted returns ids without duplicates, sorted.
func uniqueSorted(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	n := 0
	for i, id := range out {
		if i == 0 || id != out[n-1] {
			out[n] = id
			n++
		}
	}
	return out[:n]
}
