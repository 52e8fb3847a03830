package settings

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Origin is where a setting's value came from.
type Origin string

// The origins, in viper's order of precedence.
const (
	FromFlag    Origin = "flag"
	FromEnv     Origin = "env"
	FromFile    Origin = "config"
	FromDefault Origin = "default"
)

// Source is where one setting's value came from.
type Source struct {
	// Origin is the kind of place.
	Origin Origin `json:"origin"`
	// Name is the setting's name there: the flag (--cert-ttl), the
	// variable (HOSTD_CERT_TTL) or the config file's path; empty for the
	// default.
	Name string `json:"from,omitempty"`
}

func (s Source) String() string {
	switch s.Origin {
	case FromFile:
		return "config file " + s.Name
	case FromDefault:
		return "default"
	default:
		return string(s.Origin) + " " + s.Name
	}
}

// EnvName is the environment variable viper reads for key after prefix:
// HOSTD_LIVENESS_GRACE for liveness.grace.
func EnvName(prefix, key string) string {
	return strings.ToUpper(prefix + "_" + strings.NewReplacer("-", "_", ".", "_").Replace(key))
}

// Where is the source of the value Load reads for s: its flag on fs when
// given, else its variable (EnvName(prefix, key), then s.Env) when set
// and not empty, else the config file v read when that holds the key,
// else the default. That is viper's order.
func Where(fs *pflag.FlagSet, v *viper.Viper, prefix string, s Setting) Source {
	if s.Flag != "" {
		if f := fs.Lookup(s.Flag); f != nil && f.Changed {
			return Source{FromFlag, "--" + s.Flag}
		}
	}
	for _, env := range append([]string{EnvName(prefix, s.Key)}, s.Env...) {
		if os.Getenv(env) != "" {
			return Source{FromEnv, env}
		}
	}
	if v.InConfig(s.Key) {
		return Source{FromFile, v.ConfigFileUsed()}
	}
	return Source{Origin: FromDefault}
}

// Explain puts err, what a Validate said of the Config at root (a
// pointer) filled by the settings of list, in the operator's terms: a
// FieldError names its field's setting, value and source (where), and its
// other field's likewise (the value alone when no setting fills it). A
// FieldError on a field no setting fills is dropped (a service's New fills
// and checks those: paths, credentials); any other error is kept as it
// is. nil when nothing is left.
func Explain(err error, root any, list []Setting, where func(Setting) Source) error {
	paths := fieldPaths(root)
	byPath := map[string]Setting{}
	for _, s := range list {
		if p, ok := paths[pointer(s.Value)]; ok {
			byPath[p] = s
		}
	}
	// name is the key of the setting that fills path, or of the map
	// setting path is an entry of, and that setting.
	name := func(path string) (string, Setting, bool) {
		for p := path; p != ""; p = p[:max(strings.LastIndex(p, "."), 0)] {
			if s, ok := byPath[p]; ok {
				return s.Key + strings.TrimPrefix(path, p), s, true
			}
		}
		return "", Setting{}, false
	}
	var out []error
	for _, e := range flatten(err) {
		fe, ok := e.(*FieldError)
		if !ok {
			out = append(out, e)
			continue
		}
		key, s, ok := name(fe.Field)
		if !ok {
			continue
		}
		text := fmt.Sprintf("setting %s is %s (%s): %s", key, show(fe.Value), where(s), fe.Rule)
		if fe.Value == nil {
			text = fmt.Sprintf("setting %s %s", key, fe.Rule)
		}
		if fe.Other != "" {
			if okey, other, ok := name(fe.Other); ok {
				text += fmt.Sprintf(" %s, %s (%s)", okey, show(fe.OtherValue), where(other))
			} else {
				text += " " + show(fe.OtherValue) // a limit the operator cannot set
			}
		}
		out = append(out, errors.New(text))
	}
	return errors.Join(out...)
}

// flatten is the errors err joins, recursively; err alone if it joins
// none.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	joined := asJoined(err)
	if joined == nil {
		return []error{err}
	}
	var out []error
	for _, e := range joined {
		out = append(out, flatten(e)...)
	}
	return out
}

// field identifies a field by its address and type (a struct and its
// first field share an address).
type field struct {
	addr uintptr
	typ  reflect.Type
}

func pointer(p any) field {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer {
		return field{}
	}
	return field{v.Pointer(), v.Type().Elem()}
}

// fieldPaths maps every exported field under the struct root points to,
// nested structs' too, to its path (Certs.TTL).
func fieldPaths(root any) map[field]string {
	out := map[field]string{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			out[field{fv.Addr().Pointer(), f.Type}] = prefix + f.Name
			if f.Type.Kind() == reflect.Struct {
				walk(fv, prefix+f.Name+".")
			}
		}
	}
	walk(reflect.ValueOf(root).Elem(), "")
	return out
}
