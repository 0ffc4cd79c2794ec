package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The deploy files (deploy/, Dockerfile, README) are checked here for what
// can be checked without systemd running, macOS or a Docker engine: each
// contextd command line they hold parses, with the settings they mean.

// checkCommandLine parses args as contextd would, with env, without
// serving: serve and reindex go through parseFlags; the other commands run
// and may only fail for lack of a server or a file, not for their usage.
func checkCommandLine(t *testing.T, args []string, envm map[string]string) *config {
	t.Helper()
	cmd, rest, done, err := split(args, io.Discard)
	if err != nil {
		t.Errorf("contextd %q: %v", args, err)
		return nil
	}
	if done {
		return nil
	}
	switch cmd.name {
	case "serve", "reindex":
		c, _, err := parseFlags(cmd, rest, env(envm), io.Discard, io.Discard)
		if err != nil {
			t.Errorf("contextd %q: %v", args, err)
		}
		return c
	}
	err = run(t.Context(), args, env(envm), io.Discard, io.Discard)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "is not answering") && !strings.Contains(err.Error(), "contextd is not running at ") {
		t.Errorf("contextd %q: %v", args, err)
	}
	return nil
}

// TestSystemdUnit reads deploy/systemd/contextd.service: a user service
// that runs ~/.local/bin/contextd serve (where docs/install.md's install
// step puts the binary), passes PI_CODING_AGENT_DIR through, restarts on
// failure and is wanted by default.target (started at login; with
// lingering at boot). Where systemd-analyze is installed (.ci/run installs
// it), docs/install.md's service commands are run as written with a
// temporary HOME: the binary goes where its tar line extracts it (this
// test binary stands in for it) and the unit is installed by its install
// line; then `systemd-analyze --user verify` checks the installed unit.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "systemd", "contextd.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string]map[string]string{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			unit[section] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("not a unit file line: %q", line)
			}
			unit[section][k] = v
		}
	}
	for _, want := range [][3]string{
		{"Service", "ExecStart", "%h/.local/bin/contextd serve"},
		{"Service", "PassEnvironment", "PI_CODING_AGENT_DIR PI_CODING_AGENT_SESSION_DIR"},
		{"Service", "Restart", "on-failure"},
		{"Service", "Type", "exec"},
		{"Install", "WantedBy", "default.target"},
	} {
		if got := unit[want[0]][want[1]]; got != want[2] {
			t.Errorf("[%s] %s = %q, want %q", want[0], want[1], got, want[2])
		}
	}
	exe := strings.Fields(unit["Service"]["ExecStart"])
	checkCommandLine(t, exe[1:], nil)

	// docs/install.md's commands: where the binary goes, and the unit.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	var binDest, unitInstall string
	for _, line := range strings.Split(string(doc), "\n") {
		if w := strings.Fields(line); len(w) > 0 && strings.Contains(line, "tar -xzf contextd-") {
			i := slices.Index(w, "-C")
			if i < 0 || i+2 >= len(w) {
				t.Fatalf("docs/install.md tar line without -C DIR contextd: %q", line)
			}
			binDest = w[i+1] + "/" + w[i+2]
		}
		if strings.HasPrefix(line, "install -Dm644 deploy/systemd/contextd.service ") {
			unitInstall = line
		}
	}
	if want := strings.Replace(exe[0], "%h", "~", 1); binDest != want {
		t.Errorf("docs/install.md extracts the binary to %q, the unit runs %q", binDest, want)
	}
	if unitInstall == "" {
		t.Fatal("docs/install.md has no `install -Dm644 deploy/systemd/contextd.service ...` line")
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze not installed: only parsed the unit")
		return
	}
	home := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(home, strings.TrimPrefix(binDest, "~/"))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("sh", "-c", unitInstall)
	install.Dir = filepath.Join("..", "..")
	install.Env = append(os.Environ(), "HOME="+home)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", unitInstall, err, out)
	}
	path := filepath.Join(home, ".config", "systemd", "user", "contextd.service")
	runtimeDir := filepath.Join(home, "run")
	os.Mkdir(runtimeDir, 0o700)
	cmd := exec.Command(analyze, "--user", "verify", path)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+runtimeDir)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze --user verify %s: %v\n%s", path, err, out)
	}
}

// plistValue decodes the value element start (string, integer, true,
// false, array, dict) of an XML property list.
func plistValue(d *xml.Decoder, start xml.StartElement) (any, error) {
	switch start.Name.Local {
	case "string", "integer", "key":
		var s string
		err := d.DecodeElement(&s, &start)
		return s, err
	case "true", "false":
		return start.Name.Local == "true", d.Skip()
	case "array", "dict":
		var items []any
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				v, err := plistValue(d, tok)
				if err != nil {
					return nil, err
				}
				items = append(items, v)
			case xml.EndElement:
				if start.Name.Local == "array" {
					return items, nil
				}
				m := map[string]any{}
				for i := 0; i+1 < len(items); i += 2 {
					m[items[i].(string)] = items[i+1]
				}
				return m, nil
			}
		}
	}
	return nil, errors.New("unknown plist element " + start.Name.Local)
}

// TestLaunchdAgent reads deploy/launchd/dev.contextd.plist: label
// dev.contextd, started at load, restarted unless it exited cleanly, and a
// ProgramArguments shell line that runs `$HOME/.local/bin/contextd serve`
// (where docs/install.md puts the binary)
// (launchd expands neither ~ nor $HOME itself).
func TestLaunchdAgent(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "deploy", "launchd", "dev.contextd.plist"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	var top any
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			if top, err = plistValue(d, se); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	got, _ := json.Marshal(top)
	want := `{"EnvironmentVariables":{"CONTEXTD_LOG_FORMAT":"text"},"KeepAlive":{"SuccessfulExit":false},"Label":"dev.contextd","ProcessType":"Background",` +
		`"ProgramArguments":["/bin/sh","-c","exec \"$HOME/.local/bin/contextd\" serve \u003e\u003e\"$HOME/Library/Logs/contextd.log\" 2\u003e\u00261"],"RunAtLoad":true,"ThrottleInterval":"5"}`
	if string(got) != want {
		t.Errorf("plist =\n%s\nwant\n%s", got, want)
	}
	checkCommandLine(t, []string{"serve"}, nil)
}

// dockerfile is what TestDockerfile reads from the Dockerfile's last stage.
type dockerfile struct {
	env                     map[string]string
	entrypoint, cmd, health []string
	runs                    []string
	user                    string
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cont := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	jsonArray := func(s string) []string {
		var a []string
		if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &a); err != nil {
			t.Fatalf("not a JSON-form instruction: %q: %v", s, err)
		}
		return a
	}
	var df dockerfile
	for _, l := range lines {
		instr, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch instr {
		case "FROM":
			df = dockerfile{env: map[string]string{}} // only the last stage counts
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				df.env[k] = v
			}
		case "ENTRYPOINT":
			df.entrypoint = jsonArray(rest)
		case "CMD":
			df.cmd = jsonArray(rest)
		case "HEALTHCHECK":
			_, c, ok := strings.Cut(rest, " CMD ")
			if !ok {
				t.Fatalf("HEALTHCHECK without CMD: %q", l)
			}
			df.health = jsonArray(c)
		case "RUN":
			df.runs = append(df.runs, rest)
		case "USER":
			df.user = strings.TrimSpace(rest)
		}
	}
	return df
}

// TestDockerfile: the runtime image has CA certificates (Remote mode
// calls HTTPS), runs as a non-root user, starts `contextd serve` bound to
// 0.0.0.0:7467 with --allow-non-loopback's variable and the /sessions and
// /state volumes, lets `docker run IMAGE reindex` reach the reindex
// command (ENTRYPOINT is contextd alone), and health-checks with contextd
// healthcheck.
func TestDockerfile(t *testing.T) {
	df := readDockerfile(t)
	if len(df.runs) == 0 || !strings.Contains(df.runs[0], "apt-get install -y --no-install-recommends ca-certificates") || !strings.Contains(df.runs[0], "rm -rf /var/lib/apt/lists/*") {
		t.Errorf("the runtime stage does not install ca-certificates: %q", df.runs)
	}
	if df.user == "" || df.user == "root" || df.user == "0" {
		t.Errorf("USER = %q, want a non-root user", df.user)
	}
	if len(df.entrypoint) != 1 || df.entrypoint[0] != "contextd" {
		t.Errorf("ENTRYPOINT = %q, want [contextd] so that any subcommand can be run", df.entrypoint)
	}
	c := checkCommandLine(t, append(df.entrypoint[1:], df.cmd...), df.env)
	if c == nil {
		t.Fatalf("ENTRYPOINT %q + CMD %q is not serve", df.entrypoint, df.cmd)
	}
	if c.Addr != "0.0.0.0:7467" || !c.AllowNonLocal || c.SessionsDir != "/sessions" || c.StateDir != "/state" {
		t.Errorf("image serves with %+v", c)
	}
	c = checkCommandLine(t, append(df.entrypoint[1:], "reindex"), df.env)
	if c == nil || c.SessionsDir != "/sessions" || c.StateDir != "/state" {
		t.Errorf("docker run IMAGE reindex: %+v", c)
	}
	if strings.Join(df.health, " ") != "contextd healthcheck --quiet" {
		t.Errorf("HEALTHCHECK CMD = %q", df.health)
	}
	checkCommandLine(t, df.health[1:], df.env)
}

// shellWords splits a command line on blanks outside quotes and removes
// the quotes; $HOME, $(id -u) and $(id -g) get example values.
func shellWords(s string) []string {
	s = strings.NewReplacer("$(id -u)", "1000", "$(id -g)", "1000", "$HOME", "/home/me").Replace(s)
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote, in = r, true
		case quote == 0 && (r == ' ' || r == '\t'):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// dockerValueOptions are the docker run/exec options that take a value.
var dockerValueOptions = map[string]bool{"-v": true, "--volume": true, "-p": true, "--publish": true, "-e": true, "--env": true,
	"--name": true, "--user": true, "-u": true, "--restart": true, "--entrypoint": true, "--mount": true, "--filter": true}

// TestREADMEDockerCommands: every `docker run … contextd ARGS` and `docker
// exec NAME contextd ARGS` in docs/operations.md's Docker section passes ARGS (with
// the image's ENV and the command's -e settings) to a contextd command
// that parses; the registration path mapping in it maps the host sessions
// directory onto /sessions.
func TestREADMEDockerCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "\n## Docker\n")
	if i < 0 {
		t.Fatal("docs/operations.md has no ## Docker section")
	}
	section := readme[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	image := readDockerfile(t)
	checked, mapped := 0, false
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if k := strings.Index(line, " #"); k >= 0 {
			line = line[:k]
		}
		for _, part := range strings.Split(line, "&&") {
			w := shellWords(strings.TrimSpace(part))
			if len(w) < 3 || w[0] != "docker" || (w[1] != "run" && w[1] != "exec") {
				continue
			}
			envm := map[string]string{}
			for k, v := range image.env {
				envm[k] = v
			}
			entrypoint := ""
			k := 2
			for ; k < len(w) && strings.HasPrefix(w[k], "-"); k++ {
				if dockerValueOptions[w[k]] {
					if w[k] == "-e" || w[k] == "--env" {
						key, val, _ := strings.Cut(w[k+1], "=")
						envm[key] = val
					}
					if w[k] == "--entrypoint" {
						entrypoint = w[k+1]
					}
					k++
				}
			}
			if k >= len(w) {
				t.Errorf("no image or container in %q", part)
				continue
			}
			var args []string
			if w[1] == "run" {
				if w[k] != "contextd" {
					t.Errorf("image %q in %q, want contextd (docker build -t contextd .)", w[k], part)
					continue
				}
				if entrypoint != "" {
					continue // not a contextd command line
				}
				args = w[k+1:]
				if len(args) == 0 {
					args = image.cmd
				}
			} else {
				if len(w) <= k+1 || w[k+1] != "contextd" {
					continue // docker exec of another program
				}
				args = w[k+2:]
			}
			if c := checkCommandLine(t, args, envm); c != nil && len(c.PathMap) > 0 {
				mapped = c.PathMap[0].From == "/home/me/.pi/agent/sessions" && c.PathMap[0].To == "/sessions"
			}
			checked++
		}
	}
	if checked < 5 || !mapped {
		t.Errorf("checked %d docker commands (want at least 5), path map /home/me/.pi/agent/sessions=/sessions seen: %v", checked, mapped)
	}
}
