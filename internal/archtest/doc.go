// Package archtest holds the architecture tests of contextd: imports go one
// way (api → coordinator → archive, store, history, notes, session, remote;
// never back up), and the coordinator's Service is built whole by
// coordinator.New (no exported function-valued fields that other packages
// fill in after construction); docs/design.md §3. It has no code.
package archtest
