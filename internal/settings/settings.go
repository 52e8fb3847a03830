// Package settings drives a command's flags, its viper keys, their
// validation and the configuration struct they fill from one table, so
// that every default is written once: in the service's DefaultConfig.
package settings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Setting is one configurable value.
type Setting struct {
	// Key is the viper key: the YAML path and, upper-cased with '.' and
	// '-' as '_', the environment variable after the command's prefix.
	Key string
	// Flag is the command-line flag; empty for settings only a config file
	// can give (maps).
	Flag string
	// Usage is the flag's help text.
	Usage string
	// Value points into the configuration struct: its current value is
	// the default, and Load stores the merged value there. One of
	// *string, *[]string, *int, *int64, *float64, *bool, *time.Duration,
	// *map[string][]string or *map[string]string.
	Value any
	// Env are more environment variables read for it, after
	// <PREFIX>_<KEY> (GT_TOWN for hostd's town).
	Env []string
}

// Register defines each setting's flag on fs, its default read from
// Value, and binds key and flag in v.
func Register(fs *pflag.FlagSet, v *viper.Viper, list []Setting) {
	for _, s := range list {
		if len(s.Env) > 0 {
			_ = v.BindEnv(append([]string{s.Key}, s.Env...)...)
		}
		if s.Flag == "" {
			v.SetDefault(s.Key, deref(s.Value))
			continue
		}
		switch p := s.Value.(type) {
		case *string:
			fs.String(s.Flag, *p, s.Usage)
		case *[]string:
			fs.StringSlice(s.Flag, *p, s.Usage)
		case *int:
			fs.Int(s.Flag, *p, s.Usage)
		case *int64:
			fs.Int64(s.Flag, *p, s.Usage)
		case *float64:
			fs.Float64(s.Flag, *p, s.Usage)
		case *bool:
			fs.Bool(s.Flag, *p, s.Usage)
		case *time.Duration:
			fs.Duration(s.Flag, *p, s.Usage)
		default:
			panic(fmt.Sprintf("settings: %s: a flag cannot hold %T", s.Key, s.Value))
		}
		_ = v.BindPFlag(s.Key, fs.Lookup(s.Flag))
	}
}

// Bind binds each setting's key to its flag on fs again: when two
// commands share a key (hostd serve's sandbox.runtime and hostd run's),
// the command that runs calls it before Load, so that its own flag, not
// the one registered last, is the one read.
func Bind(fs *pflag.FlagSet, v *viper.Viper, list []Setting) {
	for _, s := range list {
		if s.Flag != "" {
			_ = v.BindPFlag(s.Key, fs.Lookup(s.Flag))
		}
	}
}

// Load reads every setting from v (flags, then environment, then config
// file) into its Value. A value of the wrong kind is an error naming the
// setting, never a silent zero.
func Load(v *viper.Viper, list []Setting) error {
	for _, s := range list {
		raw := v.Get(s.Key)
		var err error
		switch p := s.Value.(type) {
		case *string:
			*p, err = cast.ToStringE(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not a string", s.Key, raw)
			}
		case *[]string:
			var l []string
			l, err = cast.ToStringSliceE(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not a list of strings", s.Key, raw)
			} else if len(l) > 0 {
				*p = l
			}
		case *int:
			var n int64
			n, err = whole(s.Key, raw)
			*p = int(n)
		case *int64:
			*p, err = whole(s.Key, raw)
		case *float64:
			*p, err = cast.ToFloat64E(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not a number", s.Key, raw)
			}
		case *bool:
			*p, err = cast.ToBoolE(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not true or false", s.Key, raw)
			}
		case *time.Duration:
			*p, err = duration(s.Key, raw)
		case *map[string][]string:
			if raw != nil {
				*p, err = stringMap(s.Key, raw, "a list of strings", func(v any) ([]string, bool) {
					l, ok := v.([]any)
					out := make([]string, len(l))
					for i, x := range l {
						out[i], ok = scalar(x)
						if !ok {
							return nil, false
						}
					}
					return out, ok
				})
			}
		case *map[string]string:
			if raw != nil {
				*p, err = stringMap(s.Key, raw, "a string", scalar)
			}
		default:
			panic(fmt.Sprintf("settings: %s: cannot load into %T", s.Key, s.Value))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// whole reads a whole number: an integer, a float with nothing after
// the point, or a string of decimal digits (not 0x10 or 010, which cast
// would read as hexadecimal and octal, nor 1.5, which it would cut to 1).
func whole(key string, raw any) (int64, error) {
	switch r := raw.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32:
		return cast.ToInt64(r), nil
	case float64:
		if r == math.Trunc(r) && math.Abs(r) < 1<<63 {
			return int64(r), nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(r), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("setting %s: %v is not a whole number", key, raw)
}

// duration reads a duration as Go writes it (30s, 5m, 1h30m). A bare
// number other than 0 is refused: cast would read "grace: 10" as 10
// nanoseconds.
func duration(key string, raw any) (time.Duration, error) {
	var text string
	switch r := raw.(type) {
	case time.Duration:
		return r, nil
	case string:
		text = strings.TrimSpace(r)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		text = fmt.Sprint(r)
	default:
		return 0, fmt.Errorf("setting %s: %v is not a duration (e.g. 30s, 5m)", key, raw)
	}
	if d, err := time.ParseDuration(text); err == nil {
		return d, nil
	}
	if n, err := strconv.ParseFloat(text, 64); err == nil {
		return 0, fmt.Errorf("setting %s: %s has no unit: give one, as in %gs or %gm", key, text, n, n)
	}
	return 0, fmt.Errorf("setting %s: %v is not a duration (e.g. 30s, 5m)", key, raw)
}

// stringMap reads raw, a map from a config file, as a map of names to
// values that value reads (want says what they must be).
func stringMap[V any](key string, raw any, want string, value func(any) (V, bool)) (map[string]V, error) {
	if m, ok := raw.(map[string]V); ok { // the default
		return m, nil
	}
	m, ok := raw.(map[string]any)
	out := make(map[string]V, len(m))
	for k, v := range m {
		if out[k], ok = value(v); !ok {
			break
		}
	}
	if !ok {
		return nil, fmt.Errorf("setting %s: %v is not a map of names to %s", key, raw, want)
	}
	return out, nil
}

// scalar is a string, number or boolean from a config file as a string.
func scalar(v any) (string, bool) {
	switch v.(type) {
	case string, bool, int, int64, uint64, float64:
		return fmt.Sprint(v), true
	}
	return "", false
}

func deref(p any) any {
	switch p := p.(type) {
	case *string:
		return *p
	case *map[string][]string:
		return *p
	case *map[string]string:
		return *p
	case *[]string:
		return *p
	default:
		panic(fmt.Sprintf("settings: a config-only setting cannot hold %T", p))
	}
}
