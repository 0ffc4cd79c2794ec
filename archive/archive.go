// Package archive is Tree mode's archive index (DESIGN.md §3, reference
// codex-history-notes.md §3.6): manifest validation, bounded cycle-safe
// traversal, archived windows and hidden-summary signatures.
package archive

import "contextd/coordinator"

// Install plugs the Tree-mode hooks into the coordinator.
func Install(svc *coordinator.Service) {}
