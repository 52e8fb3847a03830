package control

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/heartbeat"
	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/tunnel"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// TestConvertShapes: each type hostd/api shows in place of a service's
// has the same fields, in the same order, with the same JSON tags, down
// to its last nested field; a field added on one side fails here.
func TestConvertShapes(t *testing.T) {
	for _, tc := range []struct{ from, to any }{
		{heartbeat.Beat{}, api.Beat{}},
		{heartbeat.Event{}, api.Event{}},
		{tunnel.ListenerHealth{}, api.ListenerHealth{}},
		{wire.SyncResult{}, api.SyncResult{}},
		{wire.Identity{}, api.Identity{}},
	} {
		from, to := reflect.TypeOf(tc.from), reflect.TypeOf(tc.to)
		sameShape(t, from.String(), from, to)
	}
}

// sameShape reports where a and b differ in kind, fields or tags.
func sameShape(t *testing.T, path string, a, b reflect.Type) {
	t.Helper()
	if a == b {
		return
	}
	if a.Kind() != b.Kind() {
		t.Errorf("%s: %s here, %s in the API", path, a.Kind(), b.Kind())
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		if a.NumField() != b.NumField() {
			t.Errorf("%s: %d fields here, %d in the API", path, a.NumField(), b.NumField())
			return
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Tag != fb.Tag {
				t.Errorf("%s: field %d is %s `%s` here, %s `%s` in the API", path, i, fa.Name, fa.Tag, fb.Name, fb.Tag)
				continue
			}
			sameShape(t, path+"."+fa.Name, fa.Type, fb.Type)
		}
	case reflect.Pointer, reflect.Slice:
		sameShape(t, path+"[]", a.Elem(), b.Elem())
	}
}

// TestConvertKeepsJSON: a service's value, every field set, and what the
// API shows in its place encode to the same bytes.
func TestConvertKeepsJSON(t *testing.T) {
	var beat heartbeat.Beat
	var events []heartbeat.Event
	var health []tunnel.ListenerHealth
	var result wire.SyncResult
	for _, v := range []any{&beat, &events, &health, &result} {
		fill(reflect.ValueOf(v).Elem(), 1)
	}
	for _, tc := range []struct {
		name     string
		from, to any
	}{
		{"beat", &beat, apiBeat(&beat)},
		{"no beat", (*heartbeat.Beat)(nil), apiBeat(nil)},
		{"events", events, apiEvents(events)},
		{"no events", []heartbeat.Event(nil), apiEvents(nil)},
		{"listeners", health, apiListeners(health)},
		{"sync result", result, apiSyncResult(result)},
		{"empty sync result", wire.SyncResult{}, apiSyncResult(wire.SyncResult{})},
	} {
		want, err1 := json.Marshal(tc.from)
		got, err2 := json.Marshal(tc.to)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the API encodes\n%s (%v)\nwhere the service's encodes\n%s (%v)", tc.name, got, err2, want, err1)
		}
	}
}

// fill sets every field v holds to a value that is not zero, n its seed:
// strings, numbers and times from n, two elements a slice, true a bool.
func fill(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 27, 9, 30, n, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), n*10+i+1)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n*10+i)
		}
	case reflect.String:
		v.SetString("s" + string(rune('a'+n%26)) + time.Duration(n).String())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	default:
		panic("fill: no value for a " + v.Kind().String())
	}
}
