// Unit tests of the projection and the settings (node --test, type stripping).
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { applyProjection, sha256Hex } from "../src/projection.ts";
import { resolveSettings } from "../src/settings.ts";

const boundary = (w: string) => ({ role: "custom", customType: "codex-context-window", details: { contextManagement: { kind: "window", currentWindowId: w } } });
const user = (t: string) => ({ role: "user", content: t });
const call = (id: string) => ({ role: "assistant", content: [{ type: "toolCall", id, name: "bash" }] });
const summary = (from: string, text: string) => ({ role: "branchSummary", fromId: from, summary: text });

test("Local: keeps the messages from the boundary of the named window", () => {
	const ms = [boundary("w0"), user("a"), boundary("w1"), user("b")];
	const out = applyProjection(ms, { start_at: { role: "custom", custom_type: "codex-context-window", window_id: "w1" }, drop: [] });
	assert.deepEqual(out, [boundary("w1"), user("b")]);
});

test("Local: starts at the assistant message whose call the first orphaned result answers", () => {
	const ms = [boundary("w0"), user("a"), call("c1"), boundary("w1"), { role: "toolResult", toolCallId: "c1" }];
	const out = applyProjection(ms, { start_at: { role: "assistant", tool_call_id: "c1" }, drop: [] });
	assert.equal(out.length, 3);
	assert.equal(out[0].role, "assistant");
});

const result = (id: string, text = "ok") => ({ role: "toolResult", toolCallId: id, content: [{ type: "text", text }] });

test("pairing: a boundary written between a call and its results is sent after them (case-01)", () => {
	const ms = [boundary("w0"), user("a"), call("r1"), boundary("w1"), result("r1"), call("d")];
	const out = applyProjection(ms, {
		start_at: { role: "assistant", tool_call_id: "r1" },
		drop: [],
		move: [{ message: { role: "custom", custom_type: "codex-context-window", window_id: "w1" }, after: { role: "toolResult", tool_call_id: "r1", occurrence: 1 } }],
	});
	assert.deepEqual(out, [call("r1"), result("r1"), boundary("w1"), call("d")]);
});

test("pairing: drops exactly the named duplicate (second) and stray results", () => {
	const ms = [user("a"), call("c"), result("c", "first"), result("c", "second"), result("late")];
	const out = applyProjection(ms, {
		start_at: null,
		drop: [
			{ role: "toolResult", tool_call_id: "c", occurrence: 2 },
			{ role: "toolResult", tool_call_id: "late", occurrence: 1 },
		],
	});
	assert.deepEqual(out, [user("a"), call("c"), result("c", "first")]);
	assert.throws(() => applyProjection(ms, { start_at: null, drop: [{ role: "toolResult", tool_call_id: "c", occurrence: 3 }] }), /result 3 of tool call c/);
});

test("pairing: a result's rank counts only the messages start_at keeps", () => {
	// A late copy of c's result after the boundary is the first c result of the window.
	const ms = [call("c"), result("c", "first"), boundary("w1"), result("c", "late"), user("b")];
	const out = applyProjection(ms, {
		start_at: { role: "custom", custom_type: "codex-context-window", window_id: "w1" },
		drop: [{ role: "toolResult", tool_call_id: "c", occurrence: 1 }],
	});
	assert.deepEqual(out, [boundary("w1"), user("b")]);
});

test("Tree: hides exactly the named summaries, keeps a manual one", () => {
	const ms = [summary("a1", "Summary 1"), summary("m1", "manual"), boundary("w1"), user("b")];
	const out = applyProjection(ms, { start_at: null, drop: [{ role: "branchSummary", from_id: "a1", summary_sha256: sha256Hex("Summary 1") }] });
	assert.deepEqual(out, [summary("m1", "manual"), boundary("w1"), user("b")]);
});

test("a key that matches nothing is an error, never a guess", () => {
	assert.throws(() => applyProjection([user("a")], { start_at: { role: "custom", custom_type: "codex-context-window", window_id: "w9" }, drop: [] }), /no such message/);
	assert.throws(
		() => applyProjection([summary("a1", "other text")], { start_at: null, drop: [{ role: "branchSummary", from_id: "a1", summary_sha256: sha256Hex("Summary 1") }] }),
		/holds 0 such messages/,
	);
});

test("settings: defaults match contextd's; env and settings.json; unknown mode refused", () => {
	const agentDir = mkdtempSync(join(tmpdir(), "ctxd-ext-"));
	const s = resolveSettings({ agentDir, env: {}, flags: {} });
	assert.equal(s.mode, "local");
	assert.equal(s.stateDir, join(agentDir, "contextd"));
	assert.equal(s.tokenFile, join(agentDir, "contextd", "token"));
	assert.equal(s.url, undefined);
	// Unset: launcher.ts decides (on with the bundled binary, else off).
	assert.equal(s.autoStart, undefined);
	assert.equal(s.binary, undefined);
	writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ contextd: { mode: "tree", url: "http://127.0.0.1:9999", autoStart: true } }));
	const f = resolveSettings({ agentDir, env: {}, flags: {} });
	assert.deepEqual([f.mode, f.url, f.autoStart], ["tree", "http://127.0.0.1:9999", true]);
	assert.equal(resolveSettings({ agentDir, env: { CONTEXTD_MODE: "remote" }, flags: {} }).mode, "remote");
	assert.throws(() => resolveSettings({ agentDir, env: { CONTEXTD_MODE: "cloud" }, flags: {} }), /unknown mode "cloud"/);
});
