package main

import "flag"

// dryRunFlag defines --dry-run on a command that starts a drain or a
// resize: it prints the simulator's prediction (POST /v1/whatif) instead,
// and starts nothing (docs/cli.md, "--dry-run").
func dryRunFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("dry-run", false, "print what the simulator predicts it will cost (POST /v1/whatif) and start nothing; --reason is optional")
}
