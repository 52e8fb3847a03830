package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/internal/termsafe"
)

var stateColour = map[string]string{
	"working": "\033[32m", "idle": "\033[36m", "stale": "\033[33m",
	"disconnected": "\033[33m", "dead": "\033[31m", "revoked": "\033[35m",
}

// Status prints the table, fitted to 80 columns.
func Status(w io.Writer, st api.Status, colour bool) {
	fmt.Fprintf(w, "hostd %s on %s, up %s, %d polecat(s)\n", st.Version, st.Listen, short(time.Since(st.Started)), len(st.Polecats))
	for _, l := range st.Listeners {
		switch {
		case !l.Up:
			fmt.Fprintf(w, "%s listener STOPPED: its tunnels are refused until hostd restarts (%s)\n", l.Transport, termsafe.Line(l.LastError))
		case time.Since(l.LastErrorAt) < time.Minute:
			fmt.Fprintf(w, "%s listener failing to accept (%d in all, last %s ago: %s)\n", l.Transport, l.AcceptErrors, short(time.Since(l.LastErrorAt)), termsafe.Line(l.LastError))
		}
	}
	if len(st.Polecats) > 0 {
		fmt.Fprintf(w, "%-16s %-8s %5s %-4s %6s %4s %4s %5s %5s %s\n", "POLECAT", "STATE", "FOR", "LINK", "RTT", "BEAT", "CPU", "RSS", "IDLE", "COMMAND")
	}
	for _, p := range st.Polecats {
		fmt.Fprintln(w, statusRow(p, colour))
	}
	printStatusNotes(w, st)
}

// statusRow is one polecat's line of the table.
func statusRow(p api.Polecat, colour bool) string {
	state := Fit(p.State, 8)
	if p.Restored {
		state = Fit(p.State+"?", 8)
	}
	padded := fmt.Sprintf("%-8s", state)
	if colour {
		padded = stateColour[p.State] + padded + "\033[0m"
	}
	link, rtt := "-", "-"
	if p.Connected {
		link, rtt = p.Transport, fmt.Sprintf("%.1fms", p.RTTMillis)
	}
	beat, cpu, rss, idle := "-", "-", "-", "-"
	if !p.LastBeat.IsZero() {
		beat = short(time.Since(p.LastBeat))
		if p.SessionState == heartbeat.SessionRunning {
			cpu, rss = fmt.Sprintf("%.0f%%", p.CPUPercent), bytesShort(p.RSSBytes)
		}
	}
	if p.IdleSeconds >= 0 {
		idle = short(time.Duration(p.IdleSeconds * float64(time.Second)))
	}
	return fmt.Sprintf("%-16s %s %5s %-4s %6s %4s %4s %5s %5s %s", Fit(p.Identity.String(), 16), padded,
		short(time.Since(p.StateSince)), Fit(link, 4), rtt, beat, cpu, rss, idle, Fit(termsafe.Line(p.Command), 13))
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

// Detail prints one polecat and its recent state changes.
func Detail(w io.Writer, d api.PolecatDetail, colour bool) {
	state := d.State
	if colour {
		state = stateColour[d.State] + state + "\033[0m"
	}
	fmt.Fprintf(w, "%s: %s for %s: %s\n", d.Identity, state, short(time.Since(d.StateSince)), termsafe.Line(d.Reason))
	if d.Restored {
		fmt.Fprintln(w, "  (last known state from before hostd restarted; the agent is not back yet)")
	}
	if d.Connected {
		fmt.Fprintf(w, "  tunnel:    %s from %s, up %s, RTT %.2fms, %d stream(s), cert %s expires %s\n", d.Transport, d.Remote,
			short(time.Since(d.Since)), d.RTTMillis, d.Streams, d.CertSerial, d.CertExpires.Local().Format(time.DateTime))
	} else {
		fmt.Fprintln(w, "  tunnel:    not connected")
	}
	if d.Beat != nil {
		printBeat(w, d)
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
// container and agent.
func printBeat(w io.Writer, d api.PolecatDetail) {
	b := d.Beat
	s := b.Session
	fmt.Fprintf(w, "  last beat: %s ago (#%d, every %gs)\n", short(time.Since(d.LastBeat)), b.Seq, b.Interval)
	fmt.Fprintf(w, "  session:   %s %s", termsafe.Line(s.Name), termsafe.Line(s.State))
	if s.ExitCode != nil {
		fmt.Fprintf(w, " (exit code %d)", *s.ExitCode)
	}
	fmt.Fprintf(w, ", command %q\n", s.Command)
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
