// Sizes and counts as a person reads them in /contextd's lines.

/**
 * A byte count in binary units with one decimal: 900 → "900 bytes",
 * 15852 → "15.5 KiB", 3 · 2^20 → "3.0 MiB" (IEC 80000-13 prefixes; 1 KiB =
 * 1024 bytes). n: a non-negative integer.
 */
export function byteSize(n: number): string {
	if (n < 1024) return `${n} ${n === 1 ? "byte" : "bytes"}`;
	const units = ["KiB", "MiB", "GiB", "TiB"];
	let v = n / 1024;
	let i = 0;
	while (v >= 1024 && i < units.length - 1) {
		v /= 1024;
		i++;
	}
	return `${v.toFixed(1)} ${units[i]}`;
}

/** n with the noun in its number: (1, "note file") → "1 note file", (2, "note file") → "2 note files". */
export function countOf(n: number, one: string, many = `${one}s`): string {
	return `${n} ${n === 1 ? one : many}`;
}
