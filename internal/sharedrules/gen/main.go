// Command gen writes extension/src/generated/rules.ts (package
// sharedrules) to standard output.
package main

import (
	"fmt"
	"os"

	"contextd/internal/sharedrules"
)

func main() {
	ts, err := sharedrules.TypeScript()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(ts)
}
