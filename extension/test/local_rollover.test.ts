// Unit tests of the Local rollover at a batch's turn_end (local_rollover.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { type LocalRolloverDeps, runLocalRollover } from "../src/local_rollover.ts";

const boundary = { type: "custom_message", customType: "codex-context-window", content: "<context_window>", display: true, details: { id: "m1" } };

function fake(answers: Record<string, unknown>) {
	const log: string[] = [];
	const d: LocalRolloverDeps = {
		call: (async (op: string, body: unknown) => {
			log.push(`${op} ${JSON.stringify(body ?? null)}`);
			const v = answers[op];
			if (v instanceof Error) throw v;
			return v;
		}) as LocalRolloverDeps["call"],
		leafBody: () => ({ leaf_id: "leaf" }),
		steer: (m) => log.push(`steer ${m.customType} ${m.content}`),
		notifyError: (m) => log.push(`error ${m}`),
		tellModel: (t) => log.push(`model ${t}`),
	};
	return { d, log };
}

test("settle at the live leaf, commit, steer the planned boundary", async () => {
	const { d, log } = fake({ "rollover-settle": { state: "settled" }, "rollover-commit": { append: [boundary] } });
	assert.equal(await runLocalRollover(d), "steered");
	assert.deepEqual(log, ['rollover-settle {"leaf_id":"leaf"}', "rollover-commit {}", "steer codex-context-window <context_window>"]);
});

test("a failed settle aborts the rollover and tells the person and the model", async () => {
	const { d, log } = fake({ "rollover-settle": new Error("contextd: boundary moved"), "rollover-abort": {} });
	assert.equal(await runLocalRollover(d), "failed");
	assert.deepEqual(log, [
		'rollover-settle {"leaf_id":"leaf"}',
		'rollover-abort {"reason":"contextd: boundary moved"}',
		"error contextd: new context failed: boundary moved; the model stays in its current window",
		"model The new context window did not open (boundary moved); you are still in the same context window.",
	]);
});

test("a failed commit whose sentence names an HTTP route: the model and the person get a plain reason, no route", async () => {
	const { d, log } = fake({ "rollover-settle": { state: "settled" }, "rollover-commit": new Error("contextd: rollover r is pending: settle it first (POST /v1/sessions/s/rollovers/r/settle)"), "rollover-abort": {} });
	assert.equal(await runLocalRollover(d), "failed");
	assert.deepEqual(log.slice(-2), [
		"error contextd: new context failed: contextd refused a step of the rollover; the model stays in its current window",
		"model The new context window did not open (contextd refused a step of the rollover); you are still in the same context window.",
	]);
});

test("the commit waits for beforeCommit, which runs after the settle", async () => {
	const { d, log } = fake({ "rollover-settle": { state: "settled" }, "rollover-commit": { append: [boundary] } });
	let release: () => void = () => undefined;
	d.beforeCommit = () => {
		log.push("hold");
		return new Promise<void>((r) => (release = r));
	};
	const run = runLocalRollover(d);
	await new Promise((r) => setTimeout(r, 0));
	assert.deepEqual(log, ['rollover-settle {"leaf_id":"leaf"}', "hold"]);
	release();
	assert.equal(await run, "steered");
	assert.deepEqual(log, ['rollover-settle {"leaf_id":"leaf"}', "hold", "rollover-commit {}", "steer codex-context-window <context_window>"]);
});
