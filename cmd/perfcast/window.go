package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/extract"
)

// windowFlags are --from and --to: the time window of the requests whose
// traces a command reads.
type windowFlags struct{ from, to string }

func (w *windowFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&w.from, "from", "", "read only the traces whose request arrived at or after this `time` (RFC 3339, such as 2026-11-27T10:00:00Z)")
	fs.StringVar(&w.to, "to", "", "read only the traces whose request arrived before this `time` (RFC 3339)")
}

// set reports whether a window was given.
func (w *windowFlags) set() bool { return w.from != "" || w.to != "" }

// apply sets cfg's time window; a time that is not RFC 3339, or a window
// that ends before it starts, is a usage error.
func (w *windowFlags) apply(cfg *extract.Config) error {
	for _, f := range []struct {
		name, value string
		dst         *int64
	}{{"--from", w.from, &cfg.From}, {"--to", w.to, &cfg.To}} {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.value)
		if err != nil {
			return usagef("%s %q: not an RFC 3339 time, such as 2026-11-27T10:00:00Z", f.name, f.value)
		}
		*f.dst = t.UnixNano()
	}
	if cfg.From != 0 && cfg.To != 0 && cfg.From >= cfg.To {
		return usagef("--from %s is not before --to %s", w.from, w.to)
	}
	return nil
}
