package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/perfcast/perfcast/internal/textout"
	"github.com/perfcast/perfcast/model"
)

func newCheckCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "check MODEL",
		Short: "Validate a model file and print its summary",
		Long: `Validate a model file (YAML or JSON, "-" for standard input) against the model
format and print a summary: hosts, components, operations, workloads, and the
service each request class asks of every resource.

With --print yaml|json the model is printed back in canonical form instead.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			m, err := model.Load(a[0])
			if err != nil {
				return err
			}
			switch format {
			case "":
				return writeSummary(cmd.OutOrStdout(), m)
			case "yaml", "json":
				return m.Encode(cmd.OutOrStdout(), model.Format(format))
			default:
				return usagef("--print takes yaml or json, not %q", format)
			}
		},
	}
	cmd.Flags().StringVar(&format, "print", "", "print the model back in canonical `yaml|json` instead of the summary")
	return cmd
}

// writeSummary prints what a model holds and what one request of each
// workload asks of each resource.
func writeSummary(w io.Writer, m *model.Model) error {
	name := m.Name
	if name == "" {
		name = m.File
	}
	ops := 0
	for _, c := range m.Components {
		ops += len(c.Operations)
	}
	fmt.Fprintf(w, "model %s: valid\n", name)
	fmt.Fprintf(w, "  %s, %s, %s, %s, %s\n\n",
		textout.Plural(len(m.Hosts), "host"), textout.Plural(len(m.Components), "component"), textout.Plural(ops, "operation"),
		textout.Plural(len(m.Passive), "passive resource"), textout.Plural(len(m.Workloads), "workload"))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tREPLICAS\tCORES\tSPEED\tSCHEDULING\tDISKS")
	for _, h := range m.Hosts {
		var disks []string
		for _, d := range h.Disks {
			disks = append(disks, fmt.Sprintf("%s(%d)", d.Name, d.Servers))
		}
		sched := string(h.CPU.Scheduling)
		if h.CPU.Scheduling == model.RR {
			sched += " " + model.FormatDuration(h.CPU.Quantum)
		}
		speed := fmt.Sprintf("%g", h.CPU.Speed)
		if v := h.CPU.SpeedVariation; h.CPU.VariesOverTime() {
			speed += fmt.Sprintf(" (cv %.3g every %s)", v, model.FormatDuration(h.CPU.SpeedWindow))
		} else if v > 0 {
			speed += fmt.Sprintf(" (cv %.3g)", v)
		}
		cores := fmt.Sprint(h.CPU.Cores)
		if h.CPU.Limited() {
			cores += fmt.Sprintf(" (limit %g every %s)", h.CPU.Limit, model.FormatDuration(h.CPU.LimitPeriod()))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", h.Name, h.Replicas, cores, speed, sched, dash(strings.Join(disks, " ")))
	}
	tw.Flush()
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tHOST\tTHREADS\tQUEUE\tOPERATIONS")
	for _, c := range m.Components {
		threads, queue := "unlimited", "unlimited"
		if c.Threads != model.Unlimited {
			threads = fmt.Sprint(c.Threads)
		}
		if c.Queue != model.QueueUnlimited {
			queue = fmt.Sprintf("%d (%s)", c.Queue, c.OnFull)
		}
		var names []string
		for _, o := range c.Operations {
			names = append(names, o.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Host, threads, queue, strings.Join(names, ", "))
	}
	tw.Flush()

	if len(m.Passive) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PASSIVE\tCAPACITY\tPER")
		for _, p := range m.Passive {
			per := "system"
			if p.Host != "" {
				per = "replica of " + p.Host
			}
			if p.Partitioned {
				per += ", one queue per unit"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Name, p.Capacity, per)
		}
		tw.Flush()
	}

	if len(m.Workloads) == 0 {
		fmt.Fprintln(w, "\nno workloads: nothing to solve")
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tLOAD\tCALLS/REQ\tDELAY/REQ")
	demands := make([]*model.Demands, len(m.Workloads))
	for i, wl := range m.Workloads {
		d := m.Demands(wl)
		demands[i] = d
		load := ""
		if wl.Open != nil {
			load = "open " + model.FormatRate(wl.Open.Rate)
			if wl.Open.CV != 1 {
				load += fmt.Sprintf(" cv %g", wl.Open.CV)
			}
		} else {
			load = fmt.Sprintf("closed %d users, think %s", wl.Closed.Users, wl.Closed.Think)
		}
		calls := 0.0
		for _, v := range d.Visits {
			calls += v
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3g\t%s\n", wl.Name, load, calls, textout.Duration(d.Delay))
	}
	tw.Flush()

	// Service demand per request class and resource.
	resSet := map[string]bool{}
	for _, d := range demands {
		for r := range d.Service {
			resSet[r] = true
		}
	}
	var resources []string
	for r := range resSet {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	if len(resources) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nservice demand per request (CPU divided by speed, all replicas):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "RESOURCE")
	for _, wl := range m.Workloads {
		fmt.Fprintf(tw, "\t%s", wl.Name)
	}
	fmt.Fprintln(tw)
	for _, r := range resources {
		fmt.Fprint(tw, r)
		for _, d := range demands {
			fmt.Fprintf(tw, "\t%s", textout.Duration(d.Service[r]))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
