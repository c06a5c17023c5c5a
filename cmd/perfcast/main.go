// Command perfcast turns the traces a running system emits into a performance
// model and answers capacity questions with it.
//
// Exit status: 0 when results were produced, 1 when the work failed, 2 for a
// usage error. Errors are printed to standard error, one line each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/internal/textout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var u usageError
	if strings.HasPrefix(err.Error(), "unknown command") {
		u = usageError{err}
	}
	if u.err != nil || errors.As(err, &u) {
		fmt.Fprintf(stderr, "perfcast: %v\n", u.err)
		fmt.Fprintf(stderr, "Run 'perfcast --help' for usage.\n")
		return 2
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "perfcast: interrupted")
		return 1
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "perfcast: %s\n", line)
	}
	return 1
}

// usageError marks a mistake in the command line, which exits with status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usagef("%s: usage: perfcast %s (%s)", cmd.Name(), cmd.Use, textout.Plural(len(a), "argument")+" given")
		}
		return nil
	}
}

// globalFlags are the flags every command has.
type globalFlags struct {
	verbose bool
	quiet   bool
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:   "perfcast",
		Short: "Performance models from traces, and capacity answers from models",
		Long: `perfcast turns the traces a running system already emits into a performance
model, and answers capacity questions with it: response-time percentiles,
throughput and utilization at other loads, on other hardware, with other pool
sizes, replicas or locks; the bottleneck and the load where it saturates.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			level := slog.LevelWarn
			if g.verbose {
				level = slog.LevelDebug
			}
			if g.quiet {
				level = slog.LevelError
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log what perfcast does")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "print results only: no progress, no warnings on standard error")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	for _, c := range commands(&g) {
		root.AddCommand(c)
	}
	return root
}

// badNumberRE matches pflag's message for a number flag given a value it
// cannot parse, which names Go's parser.
var badNumberRE = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: strconv\.Parse(Uint|Int|Float)`)

// flagError says a flag's mistake in the command line's terms.
func flagError(err error) error {
	m := badNumberRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := map[string]string{"Uint": "a whole number, at least 0", "Int": "a whole number", "Float": "a number"}[m[3]]
	return fmt.Errorf("%s: want %s, not %q", m[2], want, m[1])
}

// outputDir checks, before any work, that the directory an output file
// goes into exists, so that a mistyped path fails at once rather than
// after a long solve. "-" (standard output) needs none.
func outputDir(path string) error {
	if path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: cannot write there: no directory %s", path, dir)
	case err != nil:
		return fmt.Errorf("%s: cannot write there: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("%s: cannot write there: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s: cannot write there: it is a directory (name a file in it)", path)
	}
	return nil
}
