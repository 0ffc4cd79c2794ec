// Unit tests of the test-only Local commit hold (e2e_hold.ts).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { holdLocalCommit } from "../src/e2e_hold.ts";

test("set, the hold writes commit-held and resolves only after commit-continue exists", async () => {
	const dir = mkdtempSync(join(tmpdir(), "hold-"));
	process.env.CONTEXTD_E2E_HOLD_LOCAL_COMMIT = dir;
	try {
		let done = false;
		const run = holdLocalCommit().then(() => (done = true));
		while (!existsSync(join(dir, "commit-held"))) await new Promise((r) => setTimeout(r, 10));
		await new Promise((r) => setTimeout(r, 120));
		assert.equal(done, false);
		writeFileSync(join(dir, "commit-continue"), "");
		await run;
		assert.equal(done, true);
	} finally {
		delete process.env.CONTEXTD_E2E_HOLD_LOCAL_COMMIT;
	}
});
