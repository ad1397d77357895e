// Package gguf reads GGUF files, llama.cpp's model format (ggml's
// docs/gguf.md): versions 2 and 3, little-endian, a header, typed metadata
// key/values (arrays, strings and nested arrays included), tensor infos and
// the aligned tensor data. Open maps the file; Parse reads one already in
// memory. Dequantize widens the tensor types a converter reads (F32, F16,
// BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) to float32. Writer writes files, for
// tests and tools.
//
// Errors about a file's bytes are *FormatError values wrapping one of the
// Err* sentinels (errors.Is), and name the file, what is wrong and the byte
// offset it was found at.
//
// # Security
//
// Every byte of a file is treated as hostile, and no input makes the reader
// panic. A path that is not a regular file (a named pipe, a device) is
// refused before it is opened. Every count, string length, array length and
// tensor dimension is checked against the bytes left in the file (each
// element takes at least one byte, a string at least eight) and against a
// fixed cap before it sizes an allocation, so a header cannot make the
// reader allocate more than a small multiple of the file's own size; arrays
// nest at most 8 deep. Tensor shapes are checked for overflow, every
// tensor's data must be aligned, lie inside the file and overlap no other
// tensor's. Tensor bytes are not checked: a flipped weight reads as a
// different model.
package gguf
