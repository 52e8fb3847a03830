package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

var stateColour = map[string]string{
	"working": "\033[32m", "idle": "\033[36m", "starting": "\033[34m", "stale": "\033[33m",
	"disconnected": "\033[33m", "dead": "\033[31m", "revoked": "\033[35m",
}

// States are the states status shows, in the order it counts them.
var States = func() []string {
	out := make([]string, len(heartbeat.States))
	for i, s := range heartbeat.States {
		out[i] = string(s)
	}
	return out
}()

// StatusOptions say how Status lays out its table.
type StatusOptions struct {
	// Width is the terminal's width in columns: the table drops its less
	// important columns, then cuts commands, to fit it, but never cuts a
	// name or a state. 0 is no limit: every column, commands whole.
	Width int
	// States, when not empty, are the only states whose polecats are
	// listed; the counts still cover every polecat.
	States []string
	// Colour colours the states (for a terminal).
	Colour bool
}

// Status prints hostd's line, the polecats counted by state, and the
// table: a polecat a line, its name never cut (the column is as wide as
// the longest), every column but the command of one width whatever its
// values, so that rows line up and a refreshed table does not shift.
func Status(w io.Writer, st api.Status, o StatusOptions) {
	fmt.Fprintf(w, "hostd %s on %s, up %s\n", st.Version, st.Listen, short(time.Since(st.Started)))
	for _, l := range st.Listeners {
		switch {
		case !l.Up:
			fmt.Fprintf(w, "%s listener STOPPED: its tunnels are refused until hostd restarts (%s)\n", l.Transport, termsafe.Line(l.LastError))
		case time.Since(l.LastErrorAt) < time.Minute:
			fmt.Fprintf(w, "%s listener failing to accept (%d in all, last %s ago: %s)\n", l.Transport, l.AcceptErrors, short(time.Since(l.LastErrorAt)), termsafe.Line(l.LastError))
		}
	}
	switch {
	case st.RelayRefused:
		fmt.Fprintf(w, "relay REFUSED: this host cannot confine relayed gt and bd (%s); fix that, or set relay.allow_unconfined\n", st.RelayConfinement)
	case st.RelayConfinement != "" && !st.RelayConfined:
		fmt.Fprintf(w, "relay UNCONFINED (relay.allow_unconfined): %s\n", st.RelayConfinement)
	}
	shown := api.InStates(st.Polecats, o.States)
	fmt.Fprintln(w, counts(st.Polecats, shown, o.States))
	if len(shown) > 0 {
		printTable(w, shown, o)
	}
	printStartFailures(w, st.StartFailures)
	printStatusNotes(w, st)
}

// printStartFailures prints the polecats hostd run could not start, each
// with how long ago and why, the reason whole: it says what to do.
func printStartFailures(w io.Writer, fs []api.StartFailure) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d polecat%s hostd run could not start (each shown until its next start):\n", len(fs), plural(len(fs)))
	for _, f := range fs {
		fmt.Fprintf(w, "  %s, %s ago: %s\n", f.Identity, short(time.Since(f.At)), termsafe.Line(f.Reason))
	}
}

// counts is the line counting polecats by state: "25 polecats: 5
// working, 4 idle, ...", and, filtered, how many of them are listed.
func counts(all, shown []api.Polecat, states []string) string {
	n := map[string]int{}
	for _, p := range all {
		n[p.State]++
	}
	var parts []string
	for _, s := range States {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	line := fmt.Sprintf("%d polecat%s", len(all), plural(len(all)))
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	if len(states) > 0 {
		line += fmt.Sprintf("; listing %d (%s)", len(shown), strings.Join(states, ", "))
	}
	return line
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// column is one column of the status table.
type column struct {
	title string
	// width is the column's, fixed; the name's and the command's are
	// set for each table.
	width int
	right bool
	cell  func(p api.Polecat) string
}

// stateWidth fits every state, restored ones marked "?" too, so the
// columns after it never move.
const stateWidth = len("disconnected?")

// minCommand is the narrowest command column worth showing.
const minCommand = 10

// The columns besides the name and the state, in the order they are
// shown (allColumns) and dropped to fit a narrow terminal (dropOrder):
// the command first (once it is down to minCommand), the time in its
// state last.
var (
	colFor  = column{"FOR", 5, true, func(p api.Polecat) string { return short(time.Since(p.StateSince)) }}
	colLink = column{"LINK", 4, false, func(p api.Polecat) string { return orDashIf(p.Connected, p.Transport) }}
	colRTT  = column{"RTT", 5, true, func(p api.Polecat) string { return orDashIf(p.Connected, rttShort(p.RTTMillis)) }}
	colBeat = column{"BEAT", 5, true, func(p api.Polecat) string { return orDashIf(!p.LastBeat.IsZero(), short(time.Since(p.LastBeat))) }}
	colCPU  = column{"CPU", 5, true, func(p api.Polecat) string {
		return orDashIf(running(p), fmt.Sprintf("%.0f%%", min(p.CPUPercent, 9999)))
	}}
	colRSS  = column{"RSS", 5, true, func(p api.Polecat) string { return orDashIf(running(p), bytesShort(p.RSSBytes)) }}
	colIdle = column{"IDLE", 5, true, func(p api.Polecat) string {
		return orDashIf(p.IdleSeconds >= 0, short(time.Duration(p.IdleSeconds*float64(time.Second))))
	}}
	colCommand = column{"COMMAND", 0, false, func(p api.Polecat) string { return termsafe.Line(p.Command) }}
	dropOrder  = []*column{&colCommand, &colRSS, &colCPU, &colRTT, &colLink, &colIdle, &colBeat, &colFor}
	allColumns = []*column{&colFor, &colLink, &colRTT, &colBeat, &colCPU, &colRSS, &colIdle, &colCommand}
)

// running says whether the polecat's last beat saw its session running,
// when its CPU and memory mean something.
func running(p api.Polecat) bool {
	return !p.LastBeat.IsZero() && p.SessionState == heartbeat.SessionRunning
}

// printTable prints the polecats' table fitted to o.Width.
func printTable(w io.Writer, ps []api.Polecat, o StatusOptions) {
	nameWidth := len("POLECAT")
	commandWidth := 0
	for _, p := range ps {
		nameWidth = max(nameWidth, len(p.Identity.String()))
		commandWidth = max(commandWidth, utf8.RuneCountInString(colCommand.cell(p)))
	}
	cols := fitColumns(nameWidth, commandWidth, o.Width)
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s %-*s", nameWidth, "POLECAT", stateWidth, "STATE")
	for _, c := range cols {
		b.WriteString(" " + pad(c.title, c.width, c.right))
	}
	fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	for _, p := range ps {
		b.Reset()
		state := p.State
		if p.Restored {
			state += "?"
		}
		state = pad(state, stateWidth, false)
		if o.Colour {
			state = stateColour[p.State] + state + "\033[0m"
		}
		fmt.Fprintf(&b, "%-*s %s", nameWidth, p.Identity, state)
		for _, c := range cols {
			b.WriteString(" " + pad(Fit(c.cell(p), c.width), c.width, c.right))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// fitColumns are the columns after the name and the state that fit in
// width (0: all, the command whole), each with its width. Columns are
// dropped in dropOrder until the rest fit with at least minCommand
// columns of command; the command then takes what is left.
func fitColumns(nameWidth, commandWidth, width int) []column {
	shown := map[*column]bool{}
	fixed := nameWidth + 1 + stateWidth // every shown column but the command, with its gap
	for _, c := range allColumns {
		shown[c] = true
		if c != &colCommand {
			fixed += 1 + c.width
		}
	}
	command := max(commandWidth, len(colCommand.title))
	fits := func() bool {
		need := fixed
		if shown[&colCommand] {
			need += 1 + min(command, minCommand)
		}
		return width == 0 || need <= width
	}
	for _, c := range dropOrder {
		if fits() {
			break
		}
		shown[c] = false
		if c != &colCommand {
			fixed -= 1 + c.width
		}
	}
	if width > 0 {
		command = min(command, width-fixed-1)
	}
	var out []column
	for _, c := range allColumns {
		if shown[c] {
			col := *c
			if c == &colCommand {
				col.width = command
			}
			out = append(out, col)
		}
	}
	return out
}

// pad pads s to n columns, on the left when right-aligned.
func pad(s string, n int, right bool) string {
	gap := strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
	if right {
		return gap + s
	}
	return s + gap
}

// orDashIf is s when ok, else "-".
func orDashIf(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return OrDash(s)
}

// rttShort renders a round-trip time in at most 5 characters, so the
// column never shifts: 0.4ms, 12ms, 999ms, 1.2s, 45.0s, 120s.
func rttShort(ms float64) string {
	switch {
	case ms < 9.95:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 999.5:
		return fmt.Sprintf("%.0fms", ms)
	case ms < 99950:
		return fmt.Sprintf("%.1fs", ms/1000)
	default:
		return fmt.Sprintf("%.0fs", ms/1000)
	}
}

// printStatusNotes prints, under the table, the nudges waiting, the data
// conflicts and the branches waiting to be pushed upstream.
func printStatusNotes(w io.Writer, st api.Status) {
	var waiting []string
	for _, p := range st.Polecats {
		if p.Nudges > 0 {
			waiting = append(waiting, fmt.Sprintf("%s %d", p.Identity, p.Nudges))
		}
	}
	if len(waiting) > 0 {
		fmt.Fprintf(w, "\nnudges waiting: %s (hostd nudge <rig>/<name> --list)\n", strings.Join(waiting, ", "))
	}
	if st.SyncConflicts > 0 {
		fmt.Fprintf(w, "\n%d data conflict(s) since hostd started: the host's versions stayed, the containers' are beside them (hostd sync log)\n", st.SyncConflicts)
	}
	if len(st.Upstream) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\n%d branch(es) waiting to be pushed upstream:\n", len(st.Upstream))
		fmt.Fprintln(tw, "RIG\tBRANCH\tWAITING\tATTEMPTS\tLAST ERROR")
		for _, u := range st.Upstream {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", u.Rig, termsafe.Line(u.Branch), short(time.Since(u.Since)), u.Attempts, termsafe.Line(u.LastError))
		}
		_ = tw.Flush()
	}
}

// DetailOptions say how Detail lays out a polecat.
type DetailOptions struct {
	// Width is the terminal's width in columns, which the command's line
	// is cut to; 0 is no limit.
	Width int
	// Colour colours the state (for a terminal).
	Colour bool
}

// Detail prints one polecat and its recent state changes.
func Detail(w io.Writer, d api.PolecatDetail, o DetailOptions) {
	state := d.State
	if o.Colour {
		state = stateColour[d.State] + state + "\033[0m"
	}
	fmt.Fprintf(w, "%s: %s for %s: %s\n", d.Identity, state, short(time.Since(d.StateSince)), termsafe.Line(d.Reason))
	if d.Restored {
		fmt.Fprintln(w, "  (last known state from before hostd restarted; the agent is not back yet)")
	}
	if f := d.StartFailure; f != nil {
		fmt.Fprintf(w, "  start:     failed %s ago (hostd run; shown until its next start): %s\n", short(time.Since(f.At)), termsafe.Line(f.Reason))
	}
	if d.Connected {
		fmt.Fprintf(w, "  tunnel:    %s from %s, up %s, RTT %.2fms, %d stream(s), cert %s expires %s\n", d.Transport, d.Remote,
			short(time.Since(d.Since)), d.RTTMillis, d.Streams, d.CertSerial, d.CertExpires.Local().Format(time.DateTime))
	} else {
		fmt.Fprintln(w, "  tunnel:    not connected")
	}
	if d.Beat != nil {
		printBeat(w, d, o.Width)
	}
	if d.Nudges > 0 {
		fmt.Fprintf(w, "  nudges:    %d waiting (hostd nudge %s --list)\n", d.Nudges, d.Identity)
	}
	fmt.Fprintln(w, "  recent state changes:")
	events := d.Events
	if len(events) > 10 {
		events = events[len(events)-10:]
	}
	for _, e := range events {
		fmt.Fprintf(w, "    %s  %-12s -> %-12s %s\n", e.Time.Local().Format(time.DateTime), OrDash(string(e.From)), e.To, termsafe.Line(e.Reason))
	}
}

// printBeat prints what the polecat's last beat says of its session,
// container and agent, the command cut to width columns (0: whole).
func printBeat(w io.Writer, d api.PolecatDetail, width int) {
	b := d.Beat
	s := b.Session
	fmt.Fprintf(w, "  last beat: %s ago (#%d, every %gs)\n", short(time.Since(d.LastBeat)), b.Seq, b.Interval)
	fmt.Fprintf(w, "  session:   %s %s", termsafe.Line(s.Name), termsafe.Line(s.State))
	if s.ExitCode != nil {
		fmt.Fprintf(w, " (exit code %d)", *s.ExitCode)
	}
	if s.NeverStarted {
		fmt.Fprint(w, " (no session has run in the container yet)")
	}
	fmt.Fprintln(w)
	if s.Command != "" {
		const label = "  command:   "
		command := termsafe.Line(s.Command)
		if width > 0 {
			command = Fit(command, max(width-len(label), minCommand))
		}
		fmt.Fprintln(w, label+command)
	}
	if s.State == heartbeat.SessionRunning {
		fmt.Fprintf(w, "  processes: %d (%s), %d threads, CPU %.1f%% (%.1fs total), RSS %s", s.Processes, termsafe.Line(strings.Join(s.Names, " ")), s.Threads, s.CPUPercent, s.CPUSeconds, bytesShort(s.RSSBytes))
		if d.IdleSeconds >= 0 {
			fmt.Fprintf(w, ", idle %s", short(time.Duration(d.IdleSeconds*float64(time.Second))))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  container: load %.2f, %s memory available, %s disk free\n", b.Container.Load1, bytesShort(b.Container.MemAvailable), bytesShort(b.Container.DiskFree))
	fmt.Fprintf(w, "  agent:     %s, up %s\n", termsafe.Line(b.Agent.Version), short(time.Duration(b.Agent.Uptime*float64(time.Second))))
}
