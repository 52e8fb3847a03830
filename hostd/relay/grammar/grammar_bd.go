package grammar

// bdGrammar is bd v1.0.0's relayable subcommands (DefaultAllow's, each
// with its whole tree), from its --help; TestGrammarMatchesHelp holds it to
// the binary. Refused, each with its reason: the flags that name a host
// path, read a file but stdin, write one, set the identity or Dolt's commit
// policy; doctor's repairs; what writes, cooks or deletes formulas and
// beads. create is relayed as 'new' too when relay.allow lists it;
// docs/security.md names each refusal and why.
var bdGrammar = newGrammar("bd",
	"--actor=!identity --db=!path --dolt-auto-commit=!setting --json --profile!write --readonly --sandbox -q,--quiet -v,--verbose",
	[]cmdSpec{
		{"create", text, "--acceptance= --append-notes= -a,--assignee= --body-file=- --context= --defer= --deps= -d,--description= " +
			"--design= --design-file=- --dry-run --due= --ephemeral -e,--estimate= --event-actor= --event-category= --event-payload= " +
			"--event-target= --external-ref= -f,--file=!path --force --graph=!path --id= -l,--labels= --metadata=@ --mol-type= " +
			"--no-history --no-inherit-labels --notes= --parent= -p,--priority= --repo=!path --silent --skills= --spec-id= --stdin " +
			"--title= -t,--type= --validate --waits-for= --waits-for-gate= --wisp-type="},
		{"update", text, "--acceptance= --add-label= --allow-empty-description --append-notes= -a,--assignee= --await-id= " +
			"--body-file=- --claim --defer= -d,--description= --design= --design-file=- --due= --ephemeral -e,--estimate= " +
			"--external-ref= --history --metadata=@ --no-history --notes= --parent= --persistent -p,--priority= --remove-label= " +
			"--session= --set-labels= --set-metadata= --spec-id= -s,--status= --stdin --title= -t,--type= --unset-metadata="},
		{"close", text, "--claim-next --continue -f,--force --no-auto -r,--reason= --session= --suggest-next"},
		{"show", text, "--as-of= --children --current --id= --local-time --long --refs --short --thread -w,--watch"},
		{"list", none, "--all -a,--assignee= --closed-after= --closed-before= --created-after= --created-before= --defer-after= " +
			"--defer-before= --deferred --desc-contains= --due-after= --due-before= --empty-description --exclude-type= --flat " +
			"--format= --has-metadata-key= --id= --include-gates --include-infra --include-templates -l,--label= --label-any= " +
			"--label-pattern= --label-regex= -n,--limit= --long --metadata-field= --mol-type= --no-assignee --no-labels --no-pager " +
			"--no-parent --no-pinned --notes-contains= --overdue --parent= --pinned --pretty -p,--priority= --priority-max= " +
			"--priority-min= --ready -r,--reverse --sort= --spec= -s,--status= --title= --title-contains= --tree -t,--type= " +
			"--updated-after= --updated-before= -w,--watch --wisp-type="},
		{"ready", none, "-a,--assignee= --exclude-type= --explain --gated --has-metadata-key= --include-deferred --include-ephemeral " +
			"-l,--label= --label-any= -n,--limit= --metadata-field= --mol= --mol-type= --parent= --plain --pretty -p,--priority= " +
			"-s,--sort= -t,--type= -u,--unassigned"},
		{"dep", text, "-b,--blocks="},
		{"dep add", text, "--blocked-by= --depends-on= -t,--type="},
		{"dep cycles", none, ""},
		{"dep list", text, "--direction= -t,--type="},
		{"dep relate", text, ""},
		{"dep remove", text, ""},
		{"dep tree", text, "--direction= --format= -d,--max-depth= --reverse --show-all-paths --status="},
		{"dep unrelate", text, ""},
		{"export", none, "--all --include-infra --no-memories -o,--output=!path --scrub"},
		{"prime", none, "--export --full --mcp --stealth"},
		{"stats", none, "--all --assigned --no-activity"},
		{"blocked", none, "--parent="},
		{"formula", none, ""},
		{"formula convert!write", none, ""},
		{"formula list", none, "--type="},
		{"formula show", names, ""},
		{"merge-slot", none, ""},
		{"merge-slot acquire", none, "--holder=!identity --wait"},
		{"merge-slot check", none, ""},
		{"merge-slot create", none, ""},
		{"merge-slot release", none, "--holder=!identity"},
		{"mol", none, ""},
		{"mol bond!formula", none, ""},
		{"mol burn!delete", none, ""},
		{"mol current", text, "--for= --limit= --range="},
		{"mol distill!write", none, ""},
		{"mol last-activity", text, ""},
		{"mol pour!formula", none, ""},
		{"mol progress", text, ""},
		{"mol ready", none, ""},
		{"mol seed!formula", none, ""},
		{"mol show", text, "-p,--parallel"},
		{"mol squash!delete", none, ""},
		{"mol stale", none, "--all --blocking --unassigned"},
		{"mol wisp!formula", none, ""},
		{"doctor", none, "--agent --check= --check-health --clean!repair --deep --dry-run --fix!repair --fix-child-parent!repair " +
			"-i,--interactive --migration= --orchestrator --orchestrator-duplicates-threshold= -o,--output=!path --perf!write --server " +
			"-v,--verbose -y,--yes"},
	},
	map[string][]string{"create": {"new"}, "dep remove": {"rm"}})
