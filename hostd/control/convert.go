package control

import (
	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// The API's boundary: the values the services hold in heartbeat's,
// tunnel's and wire's types become hostd/api's own, whose JSON is the same
// (api's TestFormatUnchanged). Most convert as Go converts a struct, which
// fails to compile when a field is added on one side only;
// TestConvertShapes holds the rest, tags included.

// apiBeat is b as the API shows it; nil for none.
func apiBeat(b *heartbeat.Beat) *api.Beat {
	if b == nil {
		return nil
	}
	return &api.Beat{Seq: b.Seq, Interval: b.Interval, Session: api.Session(b.Session),
		Container: api.Container(b.Container), Agent: api.Agent(b.Agent)}
}

// apiEvents are evs as the API shows them, nil for nil.
func apiEvents(evs []heartbeat.Event) []api.Event {
	if evs == nil {
		return nil
	}
	out := make([]api.Event, len(evs))
	for i, e := range evs {
		out[i] = api.Event{Time: e.Time, From: string(e.From), To: string(e.To), Reason: e.Reason}
	}
	return out
}

// apiListeners is each accept loop's health as the API shows it.
func apiListeners(hs []tunnel.ListenerHealth) []api.ListenerHealth {
	if hs == nil {
		return nil
	}
	out := make([]api.ListenerHealth, len(hs))
	for i, h := range hs {
		out[i] = api.ListenerHealth(h)
	}
	return out
}

// apiSyncResult is a transfer's result as the API shows it.
func apiSyncResult(r wire.SyncResult) api.SyncResult {
	out := api.SyncResult{Files: r.Files, Bytes: r.Bytes, More: r.More, Skipped: r.Skipped, Error: r.Error}
	if r.Changes != nil {
		out.Changes = make([]api.SyncChange, len(r.Changes))
		for i, c := range r.Changes {
			out.Changes[i] = api.SyncChange(c)
		}
	}
	return out
}
