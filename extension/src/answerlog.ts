// Test mode of the client (docs/design.md §5.3.1; e2e/answers_test.go):
// with CONTEXTD_E2E_ANSWERS set to a file, every answer contextd gives the
// extension is appended to it as one JSON line {method, path, status,
// contentType, body}, so the end-to-end tests check each answer real Pi
// runs receive against the committed OpenAPI document. Unset (always,
// outside the tests) this does nothing.
import { appendFileSync } from "node:fs";

/** Appends one answer to $CONTEXTD_E2E_ANSWERS when it is set. */
export function recordAnswer(method: string, path: string, res: { status: number; text: string; contentType?: string }): void {
	const file = process.env.CONTEXTD_E2E_ANSWERS;
	if (!file) return;
	try {
		appendFileSync(file, `${JSON.stringify({ method, path, status: res.status, contentType: res.contentType ?? "", body: res.text })}\n`);
	} catch {
		// a test's log that cannot be written fails that test's check, not Pi
	}
}
