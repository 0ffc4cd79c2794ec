// Package hugemem allocates large transient byte buffers outside the Go
// heap, in memory the kernel may back with 2 MiB pages.
//
// Why (docs/benchmarks.md, "Full index CPU: where it goes"): on the bench
// VM every first touch of a 4 KiB page of fresh anonymous memory is a page
// fault of about 25 µs, and the Go heap asks for no huge pages, so a
// buffer of 11 MiB read once (a huge tool result's line) costs about
// 70 ms of system CPU in faults alone. A buffer from Alloc is an
// anonymous private mapping (mmap(2)) whose 2 MiB-aligned part is marked
// MADV_HUGEPAGE (madvise(2);
// https://docs.kernel.org/admin-guide/mm/transhuge.html): with the
// kernel's transparent huge pages in "madvise" or "always" mode it faults
// in 2 MiB at a time. Release unmaps it at once, so the memory leaves the
// process's RSS when the caller is done instead of when the collector and
// scavenger get to it.
//
// Only buffers of at least MinBytes are mapped; smaller ones, and every
// buffer where mapping fails or is not supported (not Linux), come from
// the Go heap with a no-op release.
package hugemem

// MinBytes is the smallest size Alloc maps outside the Go heap (smaller
// buffers are cheaper from the heap: a mapping costs two system calls).
const MinBytes = 1 << 20

// pageBytes is the size of a huge page on amd64 and arm64 Linux (the PMD
// size, /sys/kernel/mm/transparent_hugepage/hpage_pmd_size).
const pageBytes = 2 << 20
