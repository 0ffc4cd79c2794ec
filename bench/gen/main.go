// Command gen writes a large, deterministic Pi v3 session file for the
// benchmarks (bench/README.md, package sessiongen) and its manifest.
//
// Usage: gen -out FILE -mb 128 [-seed 1] [-window-every 400] [-big 1,3,6,11] [-manifest FILE.json]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"contextd/bench/sessiongen"
)

func main() {
	out := flag.String("out", "", "output JSONL file (required)")
	mb := flag.Float64("mb", 128, "target size in MiB")
	seed := flag.Uint64("seed", 1, "random seed")
	every := flag.Int("window-every", 400, "entries per context window (Local boundary cadence); 0 = one window")
	manifest := flag.String("manifest", "", "write the manifest JSON here (default OUT.manifest.json)")
	bigList := flag.String("big", "", "comma-separated sizes in MiB of the huge tool results (default: scaled to -mb, 1..11 MiB); \"none\" for none")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -out is required")
		os.Exit(2)
	}
	if *manifest == "" {
		*manifest = *out + ".manifest.json"
	}
	o := sessiongen.Options{Bytes: int64(*mb * (1 << 20)), Seed: *seed, WindowEvery: *every}
	switch *bigList {
	case "":
	case "none":
		o.Big = []int{}
	default:
		for _, f := range strings.Split(*bigList, ",") {
			var v float64
			if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err != nil || v <= 0 {
				fmt.Fprintf(os.Stderr, "gen: -big: bad size %q\n", f)
				os.Exit(2)
			}
			o.Big = append(o.Big, int(v*(1<<20)))
		}
	}
	start := time.Now()
	m, err := write(*out, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	m.File = *out
	b, _ := json.MarshalIndent(m, "", " ")
	if err := os.WriteFile(*manifest, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gen: %s: %.1f MiB, %d entries, %d windows, %d items, %d huge results, in %.1fs\n",
		*out, float64(m.Bytes)/(1<<20), m.Entries, len(m.Windows), m.Items, len(m.Big), time.Since(start).Seconds())
}

func write(path string, o sessiongen.Options) (*sessiongen.Manifest, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	m, err := sessiongen.Generate(w, o)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return m, err
}
