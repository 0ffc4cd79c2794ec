package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// extensionDir is ../extension, the Pi package.
func extensionDir() string { return filepath.Join(Dir(), "..", "extension") }

// TestExtensionTypeCheck type-checks the extension (tsc --noEmit) against
// the declarations of each installed Pi: tsconfig.pi-0.85.json maps
// @earendil-works/* and typebox to Pi 0.85.1's packages, tsconfig.pi-1.6.json
// to Pi 1.6.0's. Needs `npm ci --prefix extension` (TypeScript) and
// `npm ci --prefix e2e` (both Pis).
func TestExtensionTypeCheck(t *testing.T) {
	node := NodeBinary(t)
	tsc := filepath.Join(extensionDir(), "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("TypeScript is not installed (%v); run `npm ci --prefix extension` in the repository root", err)
	}
	for _, cfg := range []string{"tsconfig.pi-0.85.json", "tsconfig.pi-1.6.json"} {
		t.Run(strings.TrimSuffix(cfg, ".json"), func(t *testing.T) {
			cmd := exec.Command(node, tsc, "--noEmit", "-p", cfg)
			cmd.Dir = extensionDir()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tsc -p %s: %v\n%s", cfg, err, out)
			}
		})
	}
}

// TestExtensionUnit runs the extension's own unit tests (reducers, each
// mode's installer over a fake ExtensionAPI, settings, tools, projection
// keys, ...) with Node's test runner on the pinned Node (type stripping),
// once per Pi: test/setup.mjs resolves typebox and @earendil-works/* from
// the Pi CONTEXTD_TEST_PI names, as tsconfig.pi-*.json does for tsc.
func TestExtensionUnit(t *testing.T) {
	node := NodeBinary(t)
	files, _ := filepath.Glob(filepath.Join(extensionDir(), "test", "*.test.ts"))
	if len(files) == 0 {
		t.Fatal("no extension/test/*.test.ts")
	}
	for _, pi := range []string{"0.85", "1.6"} {
		t.Run("pi-"+pi, func(t *testing.T) {
			cmd := exec.Command(node, append([]string{"--import", "./test/setup.mjs", "--test"}, files...)...)
			cmd.Dir = extensionDir()
			cmd.Env = append(os.Environ(), "CONTEXTD_TEST_PI="+pi)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("node --test (Pi %s): %v\n%s", pi, err, out)
			}
		})
	}
}
