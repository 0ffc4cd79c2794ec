package session

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/google/go-cmp/cmp"
)

// goccyJSON is github.com/goccy/go-json, the fastest of the maintained
// alternatives to encoding/json measured for the oracle's decoding
// (BenchmarkDecoder).
var goccyJSON = jsonLib{unmarshal: gojson.Unmarshal, valid: gojson.Valid, typeError: func(err error) bool {
	var te *gojson.UnmarshalTypeError
	return errors.As(err, &te)
}}

// fixtureLines returns the lines of every fixture session, file by file.
func fixtureLines(tb testing.TB) ([][][]byte, int64) {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "pi-*", "*.jsonl"))
	var out [][][]byte
	var n int64
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		var lines [][]byte
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines = append(lines, bytes.Clone(sc.Bytes()))
			n += int64(len(sc.Bytes())) + 1
		}
		f.Close()
		out = append(out, lines)
	}
	if len(out) == 0 {
		tb.Fatal("no fixtures")
	}
	return out, n
}

// parseAll parses every file's lines with parse from a fresh Parser.
func parseAll(files [][][]byte, parse func(p *Parser, line []byte) (*Entry, *Decoded, SkipReason)) {
	for _, lines := range files {
		var p Parser
		for _, l := range lines {
			parse(&p, l)
		}
	}
}

// BenchmarkDecoder times decoding every line of the fixture sessions (9.7
// MB, 5,162 lines, most bytes in long strings) into Entry and Decoded:
// with the single-pass decoder (jsondec.go), allocating and with the
// indexer's scratch, and with the encoding/json oracle run on
// encoding/json and on github.com/goccy/go-json (the same struct
// decoding, library for library). Each library is first checked to
// decode every line as the decoder does.
//
// Measured on the development machine (2 cores shared with other work,
// go1.26.8, amd64; CPU time per pass over the fixtures, cpu-ms/op, which
// varied under 10% between runs where the wall time varied threefold):
// the decoder 30 ms (20 ms with the indexer's scratch), encoding/json
// 262 ms, goccy/go-json v0.12.0 50 ms, bytedance/sonic v1.15.5
// (ConfigStd) 53-57 ms, segmentio/encoding v0.5.4 80 ms. No library came
// within 20% of the decoder (the fastest takes 1.65 times its CPU, 2.5
// times the indexer's), so the decoder stays; sonic and segmentio are
// not kept as dependencies for this benchmark alone.
func BenchmarkDecoder(b *testing.B) {
	files, size := fixtureLines(b)
	b.Run("contextd", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			parseAll(files, func(p *Parser, l []byte) (*Entry, *Decoded, SkipReason) { return p.ParseLine(l, 0) })
		}
	})
	// The indexer's way: strings carved from a few large chunks.
	b.Run("contextd-scratch", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		var scratch StringChunks
		var line []byte // the indexer's read buffer: the parse rewrites text bodies in it
		defer cpuPerOp(b)()
		for b.Loop() {
			parseAll(files, func(p *Parser, l []byte) (*Entry, *Decoded, SkipReason) {
				p.Scratch = &scratch
				line = append(line[:0], l...)
				return p.ParseLine(line, 0)
			})
		}
	})
	for _, lib := range []struct {
		name string
		json jsonLib
	}{{"encoding_json", stdJSON}, {"goccy", goccyJSON}} {
		b.Run(lib.name, func(b *testing.B) {
			defer func(old jsonLib) { oracleJSON = old }(oracleJSON)
			oracleJSON = lib.json
			for _, lines := range files {
				var p1, p2 Parser
				for i, l := range lines {
					e1, d1, s1 := p1.ParseLine(l, 0)
					e2, d2, s2 := p2.oracleParseLine(l, 0)
					if s1 != s2 || !cmp.Equal(e1, e2) || !cmp.Equal(d1, d2) {
						b.Fatalf("%s decodes line %d otherwise than the decoder:\n%s%s", lib.name, i+1, cmp.Diff(e1, e2), cmp.Diff(d1, d2))
					}
				}
			}
			b.SetBytes(size)
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				parseAll(files, func(p *Parser, l []byte) (*Entry, *Decoded, SkipReason) { return p.oracleParseLine(l, 0) })
			}
		})
	}
}

// cpuPerOp starts measuring the CPU time of the process (every thread:
// the garbage collector's work counts) and returns the function that
// reports it per op as cpu-ms/op: on a machine shared with other work the
// wall time per op varies threefold, the CPU time far less.
func cpuPerOp(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
