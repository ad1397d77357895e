//go:build !amd64 && !arm64

package kernels

// No fast kernels on this architecture: the reference table runs, and only
// SIPACK_QDOT can change which path the block types take.
func init() { register() }
