package format

// SetWriteMajor makes WritePack write version v packs until the returned
// function restores the current version (tests of version 1 packs).
func SetWriteMajor(v uint16) func() {
	old := writeMajor
	writeMajor = v
	return func() { writeMajor = old }
}

// SetRouteTileGroups sets whether WithRouters writes a tiled pack by tile
// groups of the router's group (version 5) until the returned function
// restores the current choice.
func SetRouteTileGroups(on bool) func() {
	old := routeTileGroups
	routeTileGroups = on
	return func() { routeTileGroups = old }
}
