package settings

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/viper"
)

// FileKeys are the keys the config file at path holds (YAML, or any
// format viper reads by its extension), nested ones joined with '.' as
// viper does: relay.max_concurrent, relay.allow.gt.
func FileKeys(path string) ([]string, error) {
	f := viper.New()
	f.SetConfigFile(path)
	if err := f.ReadInConfig(); err != nil {
		return nil, err
	}
	return f.AllKeys(), nil
}

// CheckKeys refuses each of keys (a config file's, from FileKeys) that no
// setting of list names, naming the known key nearest to it: a misspelt
// key would otherwise be read by nothing and leave its setting at the
// default. A map setting holds any key under its own (relay.allow.gt).
func CheckKeys(keys []string, list []Setting) error {
	known := make([]string, 0, len(list))
	var maps []string
	for _, s := range list {
		known = append(known, s.Key)
		switch s.Value.(type) {
		case *map[string][]string, *map[string]string:
			maps = append(maps, s.Key+".")
		}
	}
	var errs []error
	for _, k := range slices.Sorted(slices.Values(keys)) {
		if slices.Contains(known, k) || hasAnyPrefix(k, maps) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s is not a setting%s", k, didYouMean(k, known, ".")))
	}
	return errors.Join(errs...)
}

// CheckEnv refuses each variable of env (NAME=value, as os.Environ gives
// them) whose name starts prefix_ and is no setting's of list
// (EnvName), naming the nearest one that is.
func CheckEnv(env []string, prefix string, list []Setting) error {
	known := make([]string, 0, len(list))
	for _, s := range list {
		known = append(known, EnvName(prefix, s.Key))
		known = append(known, s.Env...)
	}
	var names []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, prefix+"_") && !slices.Contains(known, name) {
			names = append(names, name)
		}
	}
	var errs []error
	for _, n := range slices.Sorted(slices.Values(names)) {
		errs = append(errs, fmt.Errorf("environment variable %s is not a setting%s", n, didYouMean(n, known, "_")))
	}
	return errors.Join(errs...)
}

// didYouMean is " (did you mean K?)" for the known key K nearest to k:
// one with the same last part (grace for liveness.grace), else one a few
// edits away; empty when none is near.
func didYouMean(k string, known []string, sep string) string {
	best, bestDist := "", len(k)/2+1
	last := k[strings.LastIndex(k, sep)+1:]
	for _, c := range known {
		if len(last) > 3 && strings.HasSuffix(c, sep+last) {
			return fmt.Sprintf(" (did you mean %s?)", c)
		}
		if d := distance(k, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
