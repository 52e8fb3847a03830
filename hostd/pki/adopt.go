package pki

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
)

// ProxyCADir is where Gas Town's gt-proxy-server keeps its CA for the
// user whose home is home: the ca_dir of its config file
// (~/gt/.runtime/proxy/config.json) when that names one, else
// ~/gt/.runtime/ca, whatever the town root (its --ca-dir default).
func ProxyCADir(home string) string {
	gt := filepath.Join(home, "gt", ".runtime")
	if f, err := os.Open(filepath.Join(gt, "proxy", "config.json")); err == nil {
		defer f.Close()
		var cfg struct {
			CADir string `json:"ca_dir"`
		}
		if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&cfg) == nil && cfg.CADir != "" {
			return cfg.CADir
		}
	}
	return filepath.Join(gt, "ca")
}

// Adopt copies the CA in from (its ca.crt and ca.key, checked as Open
// checks them) into dir, which must hold none, so that certificates it
// issued stay valid under hostd. The key is written 0600 in a 0700
// directory.
func Adopt(from, dir, trustDomain string) (*CA, error) {
	src, err := Open(from, trustDomain)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{CertFile, KeyFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("adopting the CA of %s: %s already exists; move it away first", from, filepath.Join(dir, name))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating CA directory: %w", err)
	}
	for _, name := range []string{KeyFile, CertFile} { // the key first: a certificate alone reads as a CA
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			return nil, fmt.Errorf("adopting the CA of %s: %w", from, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, fmt.Errorf("adopting the CA of %s: %w", from, err)
		}
	}
	ca, err := Open(dir, trustDomain)
	if err != nil {
		return nil, err
	}
	if !ca.Cert.Equal(src.Cert) {
		return nil, fmt.Errorf("adopting the CA of %s: the copy in %s differs (changed while copied?)", from, dir)
	}
	return ca, nil
}
