// Package profile is everything about task profiles: the .prof file format
// (read, validate, write, merge, import of PartInfer neuron lists), running
// a model over a task's prompts to sum |h| per neuron (Run, RunTask, with a
// model directory converted to a temporary pack first), the per-model cache
// of profiles made on the fly, and the SelectInfer ranking that turns
// profiles into the rank order the converter writes (RankOrder, Order).
//
// It refuses a profile file over 1 GiB, a malformed or inconsistent one
// (wrong format tag or version, sums that are negative, NaN or infinite,
// shapes that disagree or exceed the pack reader's caps), and a profile of
// another model or shape than the checkpoint it ranks (ErrOtherModel, by
// the BLAKE3 source hash). The .sip format knows nothing of profiles beyond
// the provenance and scores a ranked pack records.
package profile
