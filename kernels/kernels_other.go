//go:build !amd64 && !arm64

package kernels

// No fast kernels on this architecture: the reference table runs.
func init() { register() }
