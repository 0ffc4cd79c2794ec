// What the model and the person see when contextd refuses a history or
// notes call: one sentence in tool terms (the tool and its action), never
// the HTTP status. A validation refusal (422 with field errors,
// api/errors.go) lists each field error once, by the argument's name (its
// location without contextd's "body." prefix: the model's arguments are
// the request body), so the model can correct its call; another refusal
// keeps contextd's own sentence.
import { ContextdError } from "./client.ts";

/**
 * The error a history or notes tool call (ns, action) throws for err:
 * a ContextdError from contextd's answer (status 400–499) reworded as
 * above, with the same status, code and fields; any other error (contextd
 * not reachable, status 0; 5xx; not a ContextdError) as it is.
 */
export function toolError(ns: string, action: string, err: unknown): unknown {
	if (!(err instanceof ContextdError) || err.status < 400 || err.status > 499) return err;
	const call = `${ns} ${action}`;
	if (err.fields.length > 0) {
		const fields = err.fields.map((f) => {
			const arg = f.location === "body" ? "" : f.location.replace(/^body\./, "");
			return arg ? `${arg}: ${f.message}` : f.message;
		});
		return new ContextdError(`${call} cannot use these arguments: ${fields.join("; ")}; correct them and call ${ns} again`, err.status, err.code, err.fields);
	}
	return new ContextdError(`${call}: ${err.message.replace(/^contextd: /, "")}`, err.status, err.code, err.fields);
}
