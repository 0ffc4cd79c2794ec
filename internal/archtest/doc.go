// Package archtest holds the architecture tests of contextd: imports go one
// way (api → coordinator → archive, store, history, notes, session, remote;
// never back up), and the coordinator's Service is built whole by
// coordinator.New (no exported function-valued fields that other packages
// fill in after construction). Issue 13, "The inversion". It has no code.
package archtest
