// Package format reads and writes .sip packs (SPEC.md beside this file): a
// 128-byte preamble, a FlatBuffers index (sip.fbs, generated code in sipfb/),
// a dense section and an FFN section of bands of neuron records in rank order.
//
// Open validates a pack and maps only the prefix that a load of fraction γ of
// each sparse layer's ranks needs; WritePack writes one through a temporary
// file. Errors about a pack's bytes are *FormatError values wrapping one of
// the Err* sentinels, so callers test them with errors.Is.
//
// # Security
//
// Every byte of a pack is treated as hostile. The preamble is CRC-checked and
// every offset and length in it is checked for overflow and against the real
// file size before anything is mapped; the index is capped at 1 GiB and its
// BLAKE3 hash is checked on every open; FlatBuffers vector lengths are bounded
// by the buffer before use and any out-of-range access is recovered into an
// error; the config's sizes are capped before they size any allocation; every
// dense tensor must be the expected one, with the expected shape, aligned,
// inside the dense section and not overlapping another; chat templates are
// capped in number (64) and size (1 MiB), and must be valid UTF-8 with unique
// names (their Jinja is rendered by package chat, which gives it no file or
// network access). Weight bytes are only
// hashed by Verify: without it, a flipped weight loads as a different model.
package format
