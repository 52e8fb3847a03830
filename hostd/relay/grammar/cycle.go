package grammar

// Cycles says whether a relayed command line asks for a session cycle
// that really happens: gt handoff with --cycle, and neither a dry run nor
// help (its flags as the grammar read them, so a subject such as
// '-s --cycle' is not a request).
func (p Parsed) Cycles() bool {
	return p.Path == "gt handoff" && p.flags["cycle"] == "true" && p.flags["dry-run"] != "true" && p.flags["help"] != "true"
}
