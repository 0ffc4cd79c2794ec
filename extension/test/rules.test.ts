// The rules the extension shares with contextd, generated from Go into
// src/generated/rules.ts (internal/sharedrules; its Go test fails when the
// module is stale): the extension's own code must reproduce the examples Go
// computed, so a change of the Go text, layout, boundary rule or hint cap
// changes the extension or fails here.
import assert from "node:assert/strict";
import { test } from "node:test";
import { branchIdentity } from "../src/branch.ts";
import { BOUNDARY_CASES, BOUNDARY_SAMPLES, MAX_HINT_BYTES, MODE_ADVICE_SAMPLES, MODES } from "../src/generated/rules.ts";
import { MODES as MODES_OF_SETTINGS, modeAdvice } from "../src/settings.ts";
import { boundaryMessage, identityOf, usableHint, type WindowIdentity } from "../src/windows.ts";

test("boundaryMessage renders exactly what coordinator.BoundaryContent renders", () => {
	assert.ok(BOUNDARY_SAMPLES.length >= 2);
	for (const s of BOUNDARY_SAMPLES) {
		const m = boundaryMessage(s.agent, s.identity as WindowIdentity, s.hint);
		assert.equal(m.content, s.content, `boundary for ${s.agent}`);
		assert.deepEqual(identityOf(m), s.identity);
	}
});

test("what counts as a boundary is what session.Entry.IsBoundary says", () => {
	assert.ok(BOUNDARY_CASES.some((c) => c.boundary) && BOUNDARY_CASES.some((c) => !c.boundary));
	for (const c of BOUNDARY_CASES) {
		assert.equal(branchIdentity([c.entry]) !== undefined, c.boundary, c.name);
	}
});

test("a thread hint is used up to MAX_HINT_BYTES UTF-8 bytes and not one byte more", () => {
	const fits = "é".repeat(MAX_HINT_BYTES / 2);
	assert.equal(usableHint(fits), fits);
	assert.equal(usableHint(`${fits}x`), "");
	assert.equal(usableHint("x".repeat(MAX_HINT_BYTES)), "x".repeat(MAX_HINT_BYTES));
});

test("modeAdvice and the mode list agree with contextd.ModeAdvice and contextd.Modes: modes are read exactly, lowercase", () => {
	assert.ok(MODE_ADVICE_SAMPLES.some((s) => s.advice.includes("lowercase")));
	for (const s of MODE_ADVICE_SAMPLES) assert.equal(modeAdvice(s.input), s.advice, `modeAdvice(${JSON.stringify(s.input)})`);
	assert.deepEqual([...MODES_OF_SETTINGS], [...MODES]);
});
