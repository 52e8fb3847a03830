package git

import (
	"fmt"
	"strings"

	"github.com/polecat-sidecar/sidecar/hostd/git/branch"
	"github.com/polecat-sidecar/sidecar/hostd/git/hook"
)

// policyEnv is what the pre-receive hook needs, beside the identity, to
// judge a push to rig: its branch patterns and its known polecats.
func (s *Service) policyEnv(rig string) ([]string, error) {
	patterns, known, err := s.rigPolicy(rig)
	if err != nil {
		return nil, err
	}
	return []string{hook.PatternsEnv + "=" + strings.Join(patterns, ","), hook.PolecatsEnv + "=" + strings.Join(known, ",")}, nil
}

// rigPolicy is rig's branch patterns and its known polecats.
func (s *Service) rigPolicy(rig string) (patterns, known []string, err error) {
	patterns = rigEntry(s.cfg.Branches, rig)
	if len(patterns) == 0 {
		patterns = branch.DefaultPatterns
	}
	known = rigEntry(s.cfg.Polecats, rig)
	if s.cfg.KnownPolecats != nil {
		issued, err := s.cfg.KnownPolecats(rig)
		if err != nil {
			return nil, nil, fmt.Errorf("listing rig %s's polecats for the push policy: %w", rig, err)
		}
		known = append(append([]string{}, known...), issued...)
	}
	return patterns, known, nil
}

// rigEntry is rig's entry in a per-rig setting. Config files reach us
// through viper, which lower-cases map keys, so a rig's entry is also
// found under its lower-cased name.
func rigEntry(m map[string][]string, rig string) []string {
	if v, ok := m[rig]; ok {
		return v
	}
	return m[strings.ToLower(rig)]
}
