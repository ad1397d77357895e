//go:build !amd64 && !arm64

package kernels

// attnF16Of: no fast kernels on this architecture.
func attnF16Of(*Table) attnF16 { return attnF16{} }
