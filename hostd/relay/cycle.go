package relay

// cycles says whether gt handoff's arguments (after "handoff") ask for a
// session cycle that really happens: --cycle, and neither a dry run nor
// help. Values of the flags that take one are skipped, so a subject such
// as -s --cycle is not a request.
func cycles(args [][]byte) bool {
	cycle := false
	for i := 0; i < len(args); i++ {
		a := string(args[i])
		switch {
		case a == "--":
			return cycle
		case a == "--cycle" || a == "--cycle=true":
			cycle = true
		case a == "--cycle=false":
			cycle = false
		case a == "-n" || a == "--dry-run" || a == "--dry-run=true" || a == "-h" || a == "--help":
			return false
		case takesValue[a]:
			i++ // its value
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			// Short flags run together (-yc): a dry run or help among them
			// wins; one that takes a value ends the run and may take the next
			// argument.
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'n', 'h':
					return false
				case 's', 'm':
					if j == len(a)-1 {
						i++
					}
					j = len(a)
				}
			}
		}
	}
	return cycle
}

// takesValue are gt handoff's flags that take the next argument as their
// value when not given with '='.
var takesValue = map[string]bool{"-s": true, "--subject": true, "-m": true, "--message": true, "--reason": true}
