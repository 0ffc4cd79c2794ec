package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"contextd/api"
)

// TestReadmeShape: the README stays a first screen for a Pi user (under
// 250 lines), and its test command is exactly the one .ci/run runs.
func TestReadmeShape(t *testing.T) {
	root := filepath.Join(Dir(), "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n >= 250 {
		t.Errorf("README.md has %d lines; keep it under 250 and move the rest to docs/", n)
	}
	m := regexp.MustCompile("(?s)\n## Run the tests\n.*?```sh\n(.*?)\n```").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md has no "## Run the tests" section with a sh block`)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(ci), "\n") {
		if line == m[1] {
			found = true
		}
	}
	if !found {
		t.Errorf(".ci/run has no line that is exactly the README's test command %q", m[1])
	}
}

var (
	mdLinkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeadingRE = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	slugDropRE  = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// githubSlug is the anchor GitHub gives a heading: lower case, characters
// other than letters, digits, spaces, hyphens and underscores dropped,
// spaces made hyphens.
func githubSlug(h string) string {
	return strings.ReplaceAll(slugDropRE.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// TestDocsLinks: every relative link in README.md and docs/*.md names a
// file of the repository, and a #anchor into a Markdown file names one of
// its headings, so moving a section cannot leave a dead link behind.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join(Dir(), "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "e2e", "README.md"))
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		inBlock := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				inBlock = !inBlock
			}
			if h := mdHeadingRE.FindStringSubmatch(line); h != nil && !inBlock {
				a[githubSlug(h[1])] = true
			}
		}
		anchors[path] = a
		return a
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range mdLinkRE.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := f
			if target != "" {
				path = filepath.Join(filepath.Dir(f), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s, which does not exist", rel, link)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s links to %s: no heading with the anchor #%s", rel, link, anchor)
			}
		}
	}
}

// TestReadmeNamesTokenAndHistoryActions: the README's words for what a
// caller types are the real ones: the token header is api.TokenHeader
// ("X-Contextd-Token") with the token file the server reads
// (<state dir>/token, cmd/contextd), and the history tool's actions are
// the operations of openapi/openapi.yaml under /alpha/history/v2/
// (list_items, list_windows, read_item, search_contents).
func TestReadmeNamesTokenAndHistoryActions(t *testing.T) {
	root := filepath.Join(Dir(), "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if api.TokenHeader != "X-Contextd-Token" || !strings.Contains(readme, "`"+api.TokenHeader+"` header") {
		t.Errorf("README does not name the token header %s", api.TokenHeader)
	}
	if !strings.Contains(readme, "the file `token` in contextd's state directory (`$PI_CODING_AGENT_DIR/contextd/token`, else `~/.pi/agent/contextd/token`") {
		t.Error("README does not say where the token file is")
	}
	spec, err := os.ReadFile(filepath.Join(root, "openapi", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, m := range regexp.MustCompile(`(?m)^  /alpha/history/v2/(\w+):`).FindAllStringSubmatch(string(spec), -1) {
		actions = append(actions, m[1])
	}
	if strings.Join(actions, ",") != "list_items,list_windows,read_item,search_contents" {
		t.Fatalf("history operations in openapi.yaml: %v", actions)
	}
	for _, a := range actions {
		if !strings.Contains(readme, "`"+a+"`") {
			t.Errorf("README does not name the history action %s", a)
		}
	}
	if strings.Contains(readme, "(search, list, read)") {
		t.Error(`README still names the history actions "search, list, read"`)
	}
}
