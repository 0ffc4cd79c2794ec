package store

import (
	"fmt"
	"path/filepath"
	"strings"
)

// PathMapping rewrites session file paths that name the same files under
// another root: a Pi on the host registers /home/me/.pi/agent/sessions/…,
// which a contextd in a container reads under /sessions/…
// (`--path-map /home/me/.pi/agent/sessions=/sessions`).
type PathMapping struct {
	From string // absolute, cleaned: the prefix callers use (the host path)
	To   string // absolute, cleaned: the prefix contextd reads (the container path)
}

// ParsePathMap parses mappings written "FROM=TO" (both absolute paths).
// Errors name the bad mapping and say what form is expected.
func ParsePathMap(specs []string) ([]PathMapping, error) {
	var out []PathMapping
	for _, s := range specs {
		from, to, ok := strings.Cut(s, "=")
		if !ok || !filepath.IsAbs(from) || !filepath.IsAbs(to) {
			return nil, fmt.Errorf("--path-map %q: write HOST=CONTAINER with two absolute paths, e.g. /home/me/.pi/agent/sessions=/sessions", s)
		}
		out = append(out, PathMapping{From: filepath.Clean(from), To: filepath.Clean(to)})
	}
	return out, nil
}

// mapPath applies the first mapping whose From is path or a parent of it,
// longest From first. Paths matching no mapping are returned unchanged.
func mapPath(maps []PathMapping, path string) string {
	if len(maps) == 0 || !filepath.IsAbs(path) {
		return path
	}
	clean := filepath.Clean(path)
	best := -1
	for i, m := range maps {
		if (clean == m.From || strings.HasPrefix(clean, m.From+string(filepath.Separator)) || m.From == string(filepath.Separator)) &&
			(best < 0 || len(m.From) > len(maps[best].From)) {
			best = i
		}
	}
	if best < 0 {
		return path
	}
	m := maps[best]
	rel, err := filepath.Rel(m.From, clean)
	if err != nil {
		return path
	}
	return filepath.Join(m.To, rel)
}
