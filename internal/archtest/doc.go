// Package archtest holds the architecture tests of contextd (docs/design.md
// §3): every package's imports inside the module are those the table of
// §3 lists (TestImportsAsDesigned); imports go one way (api → coordinator
// → archive, cut, notes → store → history → session): no package below
// the coordinator depends on it or on api (TestOneWayImports, which checks
// every package not listed as built on them, new ones included); the
// coordinator's Service is built whole by coordinator.New
// (TestServiceHasNoHookFields); and nothing outside session writes
// through the Refs or Window an entry shares with its tree
// (TestTreeEntriesWrittenOnlyBySession). It has no code.
package archtest
