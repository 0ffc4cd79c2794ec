// branch.ts and the shared decisions of localindex.ts: the window on Pi's
// branch, which leaf contextd may read on each Pi, and a /context failure
// said once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { branchIdentity, emptyWindow, leafBody } from "../src/branch.ts";
import { contextErrorStep } from "../src/localindex.ts";

const boundary = (n: number) => ({
	type: "custom_message",
	customType: "codex-context-window",
	details: { contextManagement: { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: `w${n}`, windowNumber: n } },
});
const reminder = { type: "custom_message", customType: "codex-context-window", details: { contextManagement: { kind: "reminder", currentWindowId: "w1" } } };

test("branchIdentity: the latest boundary's identity; reminders and other entries are no boundary", () => {
	assert.equal(branchIdentity([]), undefined);
	assert.equal(branchIdentity([boundary(0), boundary(1), reminder, { type: "message" }])?.currentWindowId, "w1");
	assert.equal(branchIdentity([{ type: "custom", customType: "codex-context-window", details: boundary(3).details }]), undefined);
});

test("leafBody: Pi 0.85 names the leaf only once an assistant message is on disk; Pi 1 always; no leaf, no body", () => {
	const user = [{ type: "message", message: { role: "user" } }];
	const both = [...user, { type: "message", message: { role: "assistant" } }];
	assert.deepEqual(leafBody("0.85.1", "l1", user), {});
	assert.deepEqual(leafBody("0.85.1", "l1", both), { leaf_id: "l1" });
	assert.deepEqual(leafBody("1.6.0", "l1", user), { leaf_id: "l1" });
	assert.deepEqual(leafBody("1.6.0", null, both), {});
});

test("contextErrorStep: said once until it changes; a success forgets it", () => {
	const a = contextErrorStep("", "contextd: boom");
	assert.deepEqual(a, { last: "contextd: boom; this request goes without context management until contextd answers", notify: "contextd: boom; this request goes without context management until contextd answers" });
	assert.deepEqual(contextErrorStep(a.last, "contextd: boom"), { last: a.last });
	assert.equal(contextErrorStep(a.last, "contextd: x").notify, "contextd: x; this request goes without context management until contextd answers");
	assert.deepEqual(contextErrorStep(a.last, undefined), { last: "" });
});

test("emptyWindow: the window opened by the last boundary, while nothing after it is a message, custom message, branch summary or compaction", () => {
	const user = { type: "message", message: { role: "user" } };
	// Nothing after the boundary, or only entries Pi summarizes nothing of (a note entry, a label).
	assert.equal(emptyWindow([boundary(0), user, boundary(1)])?.windowNumber, 1);
	assert.equal(emptyWindow([boundary(0), user, boundary(1), { type: "custom", customType: "codex-context-note" }, { type: "label" }])?.windowNumber, 1);
	// Some work after it, a reminder (sent to the model), a Tree summary or a compaction: not empty.
	assert.equal(emptyWindow([boundary(0), user, boundary(1), user]), undefined);
	assert.equal(emptyWindow([boundary(0), reminder]), undefined);
	assert.equal(emptyWindow([boundary(0), { type: "branch_summary" }]), undefined);
	assert.equal(emptyWindow([boundary(0), { type: "compaction" }]), undefined);
	// No boundary on the branch: window 0 of a session that never rolled over.
	assert.equal(emptyWindow([]), undefined);
	assert.equal(emptyWindow([user]), undefined);
});
