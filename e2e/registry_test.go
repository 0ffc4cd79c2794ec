package e2e

// The Pi user's install, end to end with a real npm registry: the release
// packages (release/build.sh) are published to verdaccio (e2e/registry,
// npm ci --prefix e2e/registry) on 127.0.0.1, then `pi install
// npm:pi-contextd` runs in an empty agent directory with a PATH that has
// Node and npm but no Go and no contextd, and Pi starts with the faux
// model (docs/install.md).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// releaseDir returns a directory holding this tree's release packages for
// linux-x64: $CONTEXTD_RELEASE_DIR when set (.ci/run builds them once with
// release/build.sh), else a fresh `release/build.sh --out DIR linux-x64`.
func releaseDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("CONTEXTD_RELEASE_DIR"); d != "" {
		return d
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(Dir(), "..", "release", "build.sh"), "--out", out, "linux-x64")
	cmd.Dir = filepath.Join(Dir(), "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release/build.sh: %v\n%s", err, b)
	}
	return out
}

// registry is a verdaccio serving on 127.0.0.1 with an empty storage and
// no uplink: it holds only what the test publishes.
type registry struct {
	url    string // http://127.0.0.1:PORT/
	npmrc  string // userconfig with the publishing user's token
	logBuf *bytes.Buffer
}

func startRegistry(t *testing.T) *registry {
	t.Helper()
	bin := filepath.Join(Dir(), "registry", "node_modules", "verdaccio", "bin", "verdaccio")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("verdaccio is not installed (%v); run `npm ci --prefix e2e/registry` in the repository root", err)
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	config := fmt.Sprintf(`storage: %s/storage
auth:
  htpasswd:
    file: %s/htpasswd
    max_users: 1
uplinks: {}
packages:
  '**':
    access: $all
    publish: $authenticated
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
`, dir, dir)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &registry{url: "http://" + addr + "/", logBuf: &bytes.Buffer{}}
	cmd := exec.Command(NodeBinary(t), bin, "--config", filepath.Join(dir, "config.yaml"), "--listen", addr)
	cmd.Stdout, cmd.Stderr = r.logBuf, r.logBuf
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(r.url + "-/ping"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("verdaccio did not answer /-/ping:\n%s", r.logBuf)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The publishing user (verdaccio's adduser route, as `npm adduser` calls it).
	body := `{"name":"ci","password":"ci-password-1"}`
	req, _ := http.NewRequest("PUT", r.url+"-/user/org.couchdb.user:ci", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var tok struct {
		Token string `json:"token"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &tok) != nil || tok.Token == "" {
		t.Fatalf("adduser: %d %s", resp.StatusCode, b)
	}
	r.npmrc = filepath.Join(dir, "npmrc")
	if err := os.WriteFile(r.npmrc, []byte("//"+addr+"/:_authToken="+tok.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// userPath makes a PATH directory holding only node (the pinned Node 22)
// and npm (the machine's npm, run by that node), and returns
// "DIR:/usr/bin:/bin": what a person with only Node installed has. It
// fails the test when go or contextd can be found on it.
func userPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not installed")
	}
	npmCLI, err := filepath.EvalSymlinks(npm)
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"node": NodeBinary(t), "npm": npmCLI} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	path := dir + ":/usr/bin:/bin"
	for _, d := range strings.Split(path, ":") {
		for _, p := range []string{"go", "contextd"} {
			if _, err := os.Stat(filepath.Join(d, p)); err == nil {
				t.Fatalf("%s is on the user's PATH (%s); the test needs a PATH without it", p, d)
			}
		}
	}
	return path
}

// TestRegistryInstall (docs/install.md): `pi install npm:pi-contextd` from a
// registry in an empty agent directory, then Pi 0.85.1 and 1.6.0 each: the
// first Pi starts contextd from the bundled binary (nothing else could:
// no contextd on PATH, no CONTEXTD_BIN, no CONTEXTD_AUTOSTART), its first
// request holds window 0, new_context rolls over to window 1, and a second
// Pi in the same agent directory uses the same contextd. With
// CONTEXTD_REGISTRY_TRANSCRIPT=FILE the install and the state it leaves
// are written to FILE (docs/install.md shows one).
func TestRegistryInstall(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the test packs the linux-x64 binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dist := releaseDir(t)
	reg := startRegistry(t)
	version := extensionVersion(t)
	for _, pkg := range []string{"pi-contextd-linux-x64-" + version + ".tgz", "pi-contextd-" + version + ".tgz"} {
		cmd := exec.Command("npm", "publish", filepath.Join(dist, pkg), "--registry", reg.url, "--userconfig", reg.npmrc)
		cmd.Env = append(os.Environ(), "npm_config_cache="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm publish %s: %v\n%s\nregistry log:\n%s", pkg, err, out, reg.logBuf)
		}
	}
	path := userPath(t)
	var transcript bytes.Buffer
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{
			tool("bash", map[string]any{"command": factCommand}), // 0
			tool("new_context", nil),                             // 1
			{Text: "done"},                                       // 2
		})
		userEnv := []string{"HOME=" + filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR=" + r.agent, "PATH=" + path,
			"npm_config_registry=" + reg.url, "npm_config_cache=" + filepath.Join(r.dir, "npm-cache"),
			"npm_config_userconfig=" + filepath.Join(r.dir, "home", ".npmrc")}
		install := exec.Command(NodeBinary(t), filepath.Join(Dir(), "node_modules", v.CLI), "install", "npm:pi-contextd")
		install.Dir = r.work
		install.Env = append(os.Environ(), userEnv...)
		start := time.Now()
		out, err := install.CombinedOutput()
		if err != nil {
			t.Fatalf("pi install npm:pi-contextd: %v\n%s\nregistry log:\n%s", err, out, reg.logBuf)
		}
		installTime := time.Since(start)
		bundled := filepath.Join(r.agent, "npm", "node_modules", "pi-contextd-linux-x64", "bin", "contextd")
		if _, err := os.Stat(bundled); err != nil {
			t.Fatalf("no bundled binary after pi install: %v\n%s", err, out)
		}
		for _, other := range []string{"pi-contextd-linux-arm64", "pi-contextd-darwin-x64", "pi-contextd-darwin-arm64"} {
			if _, err := os.Stat(filepath.Join(r.agent, "npm", "node_modules", other)); err == nil {
				t.Errorf("%s installed on linux-x64", other)
			}
		}
		var settings struct {
			Packages []string `json:"packages"`
		}
		b, _ := os.ReadFile(filepath.Join(r.agent, "settings.json"))
		if err := json.Unmarshal(b, &settings); err != nil || !slices.Equal(settings.Packages, []string{"npm:pi-contextd"}) {
			t.Fatalf("settings.json after pi install: %s, want packages [npm:pi-contextd]", b)
		}

		r.installed = true
		r.env = append(r.env, userEnv...)
		t.Cleanup(func() {
			stop := exec.Command(bundled, "stop", "--state-dir", r.state)
			if out, err := stop.CombinedOutput(); err != nil {
				t.Errorf("contextd stop: %v\n%s", err, out)
			}
		})
		p := r.startPi()
		p.prompt("find the fact", 1)

		// contextd was started by the extension, from the bundled binary.
		var d struct {
			URL     string `json:"url"`
			PID     int    `json:"pid"`
			Version string `json:"version"`
		}
		b, err = os.ReadFile(filepath.Join(r.state, "contextd.json"))
		if err != nil || json.Unmarshal(b, &d) != nil {
			t.Fatalf("discovery file: %v %s", err, b)
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", d.PID))
		if want, _ := filepath.EvalSymlinks(bundled); err != nil || exe != want {
			t.Errorf("contextd pid %d runs %q (%v), want the bundled %s", d.PID, exe, err, want)
		}
		if d.Version != "v"+version {
			t.Errorf("contextd version %q, want v%s (the package version)", d.Version, version)
		}
		var auto struct {
			PID int `json:"pid"`
		}
		if b, err := os.ReadFile(filepath.Join(r.state, "autostart.json")); err != nil || json.Unmarshal(b, &auto) != nil || auto.PID != d.PID {
			t.Errorf("autostart.json = %s (%v), want pid %d", b, err, d.PID)
		}
		logText := r.readFile(filepath.Join(r.state, "contextd.log"))
		if !strings.Contains(logText, `msg="contextd listening"`) || !strings.Contains(logText, "version=v"+version) {
			t.Errorf("contextd.log in the state dir:\n%s", logText)
		}
		r.addr = strings.TrimPrefix(d.URL, "http://") // for r.api

		// Window 0 before the first request; new_context rolls over to window 1.
		_, _, es := r.session()
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2 (window 0, then window 1 after new_context)", len(bs))
		}
		w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
		reqs := r.requests()
		first := turn(t, reqs, 0).conversation()
		if w0.WindowNumber != 0 || len(first) != 2 || !strings.Contains(first[0].text(), "Current context window id: "+w0.CurrentWindowID) || first[1].text() != "find the fact" {
			t.Errorf("first request: %d messages, first %q; want the window-0 boundary %s, then the prompt", len(first), first[0].text(), w0.CurrentWindowID)
		}
		next := turn(t, reqs, 2).conversation()
		if w1.WindowNumber != 1 || w1.PreviousWindowID != w0.CurrentWindowID || len(next) != 1 || !strings.Contains(next[0].text(), "Current context window id: "+w1.CurrentWindowID) {
			t.Errorf("request after new_context: %d messages, first %q; want only the window-1 boundary", len(next), next[0].text())
		}
		if anyContains(turn(t, reqs, 2), fact) {
			t.Errorf("request after new_context still holds the fact")
		}
		checkClean(t, p, reqs)

		// A second Pi in the same agent directory, while the first runs.
		r2 := *r
		r2.logPath, r2.script = filepath.Join(r.dir, "requests-2.jsonl"), filepath.Join(r.dir, "script-2.json")
		os.WriteFile(r2.script, []byte(`[{"text":"hello from the second Pi"}]`), 0o600)
		p2 := r2.startPi()
		p2.prompt("hello", 1)
		var d2 struct {
			PID int `json:"pid"`
		}
		b, _ = os.ReadFile(filepath.Join(r.state, "contextd.json"))
		if json.Unmarshal(b, &d2) != nil || d2.PID != d.PID {
			t.Errorf("second Pi: discovery file %s, want the first contextd (pid %d)", b, d.PID)
		}
		clients, _ := filepath.Glob(filepath.Join(r.state, "clients", "*"))
		if want := []string{filepath.Join(r.state, "clients", fmt.Sprint(p.cmd.Process.Pid)), filepath.Join(r.state, "clients", fmt.Sprint(p2.cmd.Process.Pid))}; !sameSet(clients, want) {
			t.Errorf("clients = %v, want both Pis %v", clients, want)
		}
		if n := strings.Count(r.readFile(filepath.Join(r.state, "contextd.log")), `msg="contextd listening"`); n != 1 {
			t.Errorf("contextd started %d times, want once", n)
		}
		first2 := turn(t, r2.requests(), 0).conversation()
		if len(first2) != 2 || !strings.Contains(first2[0].text(), "Current context window id: ") || !strings.Contains(first2[0].text(), "First context window id: ") {
			t.Errorf("second Pi's first request: %d messages, first %q; want its own window 0", len(first2), first2[0].text())
		}
		checkClean(t, p2, r2.requests())
		p2.stop()
		p.stop()

		fmt.Fprintf(&transcript, "## Pi %s\n\n$ pi install npm:pi-contextd        # %.1f s\n%s\n", v.Semver, installTime.Seconds(), strings.TrimSpace(string(out)))
		fmt.Fprintf(&transcript, "$ ls ~/.pi/agent/npm/node_modules\n%s\n", strings.Join(dirNames(t, filepath.Join(r.agent, "npm", "node_modules")), "  "))
		fmt.Fprintf(&transcript, "$ pi            # prompt: find the fact (the faux model runs a command, then new_context)\n")
		fmt.Fprintf(&transcript, "$ cat ~/.pi/agent/contextd/contextd.json\n%s", strings.ReplaceAll(r.readFile(filepath.Join(r.state, "contextd.json")), r.agent, "~/.pi/agent"))
		fmt.Fprintf(&transcript, "$ head -2 ~/.pi/agent/contextd/contextd.log\n%s\n", strings.ReplaceAll(strings.Join(firstLines(logText, 2), "\n"), r.agent, "~/.pi/agent"))
		fmt.Fprintf(&transcript, "(session: window 0 %s, window 1 %s after new_context; a second pi used the same contextd, pid %d)\n\n", w0.CurrentWindowID, w1.CurrentWindowID, d.PID)
	})
	if f := os.Getenv("CONTEXTD_REGISTRY_TRANSCRIPT"); f != "" {
		if err := os.WriteFile(f, transcript.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// extensionVersion is extension/package.json's version (the release version).
func extensionVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(extensionDir(), "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Version == "" {
		t.Fatalf("extension/package.json version: %v", err)
	}
	return p.Version
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func firstLines(s string, n int) []string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[:min(n, len(ls))]
}
