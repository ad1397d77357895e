package format

// SetWriteMajor makes WritePack write version v packs until the returned
// function restores the current version (tests of version 1 packs).
func SetWriteMajor(v uint16) func() {
	old := writeMajor
	writeMajor = v
	return func() { writeMajor = old }
}
