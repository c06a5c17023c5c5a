package main

import "github.com/spf13/cobra"

// commands lists perfcast's subcommands.
func commands(g *globalFlags) []*cobra.Command {
	return []*cobra.Command{
		newCheckCmd(),
		newExtractCmd(g),
		newPredictCmd(),
		newSweepCmd(),
		newCapacityCmd(),
		newStatsCmd(),
		newGenerateCmd(g),
		newValidateCmd(),
		newAnalyzeCmd(g),
		newReportCmd(g),
		newReceiveCmd(g),
	}
}
