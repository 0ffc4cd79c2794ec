// Remote-mode window boundaries: the same message contextd plans in Local
// and Tree (coordinator.BoundaryContent), identity rules of docs/codex-contract.md
// "Window boundaries", Codex's thread-hint bound ("Thread hint").
import assert from "node:assert/strict";
import { test } from "node:test";
import { GUIDANCE } from "../src/generated/rules.ts";
import { boundaryMessage, identityOf, nextIdentity, sliceAtLatestBoundary, usableHint } from "../src/windows.ts";

test("boundary content is contextd's: guidance, blank line, <context_window> lines, hint", () => {
	const id = { protocol: 1 as const, kind: "window" as const, firstWindowId: "w0", currentWindowId: "w1", previousWindowId: "w0", windowNumber: 1 };
	const m = boundaryMessage("/root", id, "Recent notes (up to 5, most-recent first):\n- /root/notes/a.md (1 lines, 2 UTF-8 bytes)");
	assert.equal(
		m.content,
		`<context_window_guidance>\n${GUIDANCE}\n</context_window_guidance>\n\n<context_window>\nAgent name: /root\nFirst context window id: w0\nCurrent context window id: w1\nPrevious context window id: w0\nRecent notes (up to 5, most-recent first):\n- /root/notes/a.md (1 lines, 2 UTF-8 bytes)\n</context_window>`,
	);
	assert.equal(m.customType, "codex-context-window");
	assert.equal(m.display, true);
	assert.deepEqual(identityOf(m), id);
});

test("window 0, then first id kept, previous = current, number + 1", () => {
	const w0 = nextIdentity(undefined);
	assert.equal(w0.windowNumber, 0);
	assert.equal(w0.firstWindowId, w0.currentWindowId);
	assert.equal(w0.previousWindowId, undefined);
	const w1 = nextIdentity(w0);
	assert.deepEqual([w1.firstWindowId, w1.previousWindowId, w1.windowNumber], [w0.currentWindowId, w0.currentWindowId, 1]);
	assert.notEqual(w1.currentWindowId, w0.currentWindowId);
});

test("hint: non-empty and at most 4,000 UTF-8 bytes, else omitted", () => {
	assert.equal(usableHint("x"), "x");
	assert.equal(usableHint(""), "");
	assert.equal(usableHint(42), "");
	assert.equal(usableHint("é".repeat(2000)), "é".repeat(2000));
	assert.equal(usableHint("é".repeat(2001)), "");
});

test("remote projection starts at the latest boundary", () => {
	const b = (w: string) => ({ role: "custom", ...boundaryMessage("/root", { ...nextIdentity(undefined), currentWindowId: w }, "") });
	const ms = [b("a"), { role: "user" }, b("b"), { role: "user" }];
	assert.deepEqual(sliceAtLatestBoundary(ms), ms.slice(2));
	assert.deepEqual(sliceAtLatestBoundary([{ role: "user" }]), [{ role: "user" }]);
});

test("remote projection keeps the earlier turns of an adopted window 0 (startEntryId)", () => {
	const adopted = { role: "custom", ...boundaryMessage("/root", { ...nextIdentity(undefined), startEntryId: "e1" }, "") };
	const ms = [{ role: "user" }, { role: "assistant" }, adopted, { role: "user" }];
	assert.deepEqual(sliceAtLatestBoundary(ms), ms);
	// The next window slices at its own boundary.
	const next = { role: "custom", ...boundaryMessage("/root", nextIdentity(identityOf(adopted)), "") };
	assert.equal(nextIdentity(identityOf(adopted)).startEntryId, undefined);
	assert.deepEqual(sliceAtLatestBoundary([...ms, next, { role: "user" }]), [next, { role: "user" }]);
});
