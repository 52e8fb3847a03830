// Package settings drives a command's flags, its viper keys, their
// validation and the configuration struct they fill from one table, so
// that every default is written once: in the service's DefaultConfig.
package settings

import (
	"fmt"
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
	// *string, *[]string, *int, *bool, *time.Duration or
	// *map[string][]string.
	Value any
}

// Register defines each setting's flag on fs, its default read from
// Value, and binds key and flag in v.
func Register(fs *pflag.FlagSet, v *viper.Viper, list []Setting) {
	for _, s := range list {
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
			*p, err = cast.ToIntE(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not a whole number", s.Key, raw)
			}
		case *int64:
			*p, err = cast.ToInt64E(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not a whole number", s.Key, raw)
			}
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
			*p, err = cast.ToDurationE(raw)
			if err != nil {
				err = fmt.Errorf("setting %s: %v is not a duration (e.g. 30s, 5m)", s.Key, raw)
			}
		case *map[string][]string:
			if raw != nil {
				*p = v.GetStringMapStringSlice(s.Key)
			}
		case *map[string]string:
			if raw != nil {
				*p = v.GetStringMapString(s.Key)
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

func deref(p any) any {
	switch p := p.(type) {
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
