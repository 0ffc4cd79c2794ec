// Off mode: the extension registers nothing; Pi runs as if it were not
// installed (no tools, no hooks, no commands).
import type { Host } from "../host.ts";
import type { Say } from "../session.ts";

/** Registers nothing: Off mode leaves Pi unchanged. */
export function installOff(_host: Host, _say: Say): void {}
