// Unit tests of the mailbox a replaced session's extension instance leaves
// for the live one (handoff.ts).
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { handOff, receive, replacedDuringSummaryNotice, resetHandoff } from "../src/handoff.ts";
import { entryText } from "../src/modes/tree.ts";

beforeEach(() => resetHandoff());

test("a message left before the new session starts is delivered at its session_start; a stale receiver keeps it for the next", () => {
	handOff({ notice: "n1" });
	const got: string[] = [];
	receive(() => {
		throw new Error("This extension ctx is stale");
	});
	receive((h) => {
		got.push(h.notice);
		return true;
	});
	handOff({ notice: "n2" });
	assert.deepEqual(got, ["n1", "n2"]);
});

test("the notice names the file and says what to do in Pi terms", () => {
	assert.equal(
		replacedDuringSummaryNotice("/s/a.jsonl"),
		"contextd: the session you left (/s/a.jsonl) got its branch summary but its new context window did not open yet; /resume it and the window opens (or run /contextd finish there)",
	);
});

test("entryText: a custom message's and a user message's text, nothing for other entries (AgentSession.navigateTree)", () => {
	assert.equal(entryText({ type: "custom_message", content: "<context_window>x</context_window>" }), "<context_window>x</context_window>");
	assert.equal(entryText({ type: "message", message: { role: "user", content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }] } }), "ab");
	assert.equal(entryText({ type: "message", message: { role: "assistant", content: "x" } }), undefined);
	assert.equal(entryText(undefined), undefined);
});
