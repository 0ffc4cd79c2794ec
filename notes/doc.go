// Package notes implements the Codex `notes` namespace for contextd's Local
// and Tree modes: virtual note paths, replay of the note entries Pi stores in
// a session, the five note operations, the thread hint and the Tree-mode note
// snapshot.
//
// The package is pure: it reads no file, speaks no HTTP and runs no SQL. Its
// input is the decoded note entries of a session's active branch (see
// DecodeEvent and Replay); its output is Go values shaped like the seed
// extension's Local results (docs/codex-contract.md "Local notes"),
// ready to be encoded as JSON. Writes are plans: PlanWrite and PlanAppend
// validate a write and return the exact custom entry the extension must
// append; contextd itself never writes a session file (docs/design.md §1, §5.1).
//
// # Data model
//
// A note file is keyed by its full virtual path, such as
// "/root/notes/plan.md" (ResolveFile). Its content is a UTF-8 string of at
// most MaxFileBytes bytes; its times are Unix milliseconds (the `timestamp`
// of the entry that created or last changed it) and are shown to the model
// as ISO-8601 UTC strings with milliseconds, the format of JavaScript's
// Date.prototype.toISOString ("2026-07-06T12:47:08.114Z").
//
// # Lines
//
// Every operation that talks about lines (read_file windows, search matches,
// the "(n lines, …)" counts of the thread hint) splits the text at "\n" and
// nothing else, exactly like JavaScript's text.split("\n"): "a\nb" is 2
// lines, "a\n" is also 2 lines (the second one empty), "a" is 1 line. This
// is what the seed does: the fixtures' 13-line checkpoint notes hold 12 "\n"
// and end with one. The one exception, chosen here because the reference is
// silent, is the empty text, which has 0 lines. A "\r" before a "\n" stays
// part of its line.
//
// # Errors
//
// Invalid input is reported as *contextd.Error with Code contextd.EInvalid
// (HTTP 422) or contextd.ETooLarge (HTTP 413); its Message is the sentence
// the model sees.
// Malformed session entries are reported by DecodeEvent as errors wrapping
// ErrMalformedEvent; callers count and skip them.
package notes
