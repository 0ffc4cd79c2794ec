// Test-only pause of a Local rollover between settle and commit
// (e2e/piext_crash_test.go TestPiExtensionKillPiBeforeSummary, row
// local-after-settle; the Tree counterpart is CONTEXTD_E2E_HOLD_SUMMARY in
// e2e/faux/faux-provider.ts). A Local
// rollover commits right after it is settled, with no model call between,
// so the end-to-end rig needs this hook to kill Pi there. With
// CONTEXTD_E2E_HOLD_LOCAL_COMMIT set to a directory, the pause writes
// DIR/commit-held and waits (polling every 50 ms, without limit) until
// DIR/commit-continue exists. Unset (always, outside the tests) it returns
// at once and touches no file.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Waits at the Local commit hold when $CONTEXTD_E2E_HOLD_LOCAL_COMMIT names a directory; resolves at once otherwise. */
export async function holdLocalCommit(): Promise<void> {
	const dir = process.env.CONTEXTD_E2E_HOLD_LOCAL_COMMIT ?? "";
	if (!dir) return;
	writeFileSync(join(dir, "commit-held"), "");
	while (!existsSync(join(dir, "commit-continue"))) await new Promise((r) => setTimeout(r, 50));
}
