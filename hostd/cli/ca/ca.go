// Package ca holds the commands on the town's CA and what it issues:
// hostd ca init, hostd cert issue, revoke and list, and hostd token
// create.
package ca

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/hostd/state"
)

// NewCACmd is hostd ca: init.
func NewCACmd(a *command.App) *cobra.Command {
	o := &caInitOptions{App: a}
	ca := &cobra.Command{Use: "ca", Short: "Manage the town's certificate authority"}
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create the CA at <town>/.runtime/ca, or reuse or adopt one",
		Long: `Make the town's CA at <town>/.runtime/ca/ca.crt and ca.key (key mode 0600,
directory 0700). In order:

  - a CA already there, including one Gas Town's proxy made, is reused as it is;
  - else gt-proxy-server's CA is adopted: copied there, so that the
    certificates it issued stay valid. It is the one in --from, or where
    gt-proxy-server keeps it whatever the town root: the ca_dir of
    ~/gt/.runtime/proxy/config.json, else ~/gt/.runtime/ca;
  - else (or with --new) a new CA is created.

It says which, and where it looked. It also makes hostd's runtime directory,
<town>/.runtime/hostd (0700), where hostd serve's settings file config.yaml
goes, and names that file. With --json it prints one object: action
(reused, adopted or created), from (the adopted CA's directory), subject
(the CA's common name), cert (the path of ca.crt), expires (RFC 3339),
sha256 (the hex SHA-256 of the CA certificate, which join tokens carry)
and config (the path of config.yaml, which may not exist yet).`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	initCmd.Flags().StringVar(&o.from, "from", "", "adopt the CA in this directory (its ca.crt and ca.key) when the town has none (default: gt-proxy-server's, if it has one)")
	initCmd.Flags().BoolVar(&o.fresh, "new", false, "create a new CA when the town has none, even if gt-proxy-server has one (a throw-away town)")
	initCmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	initCmd.MarkFlagsMutuallyExclusive("from", "new")
	ca.AddCommand(initCmd)
	return ca
}

// caInitOptions are hostd ca init's flags.
type caInitOptions struct {
	*command.App
	from        string
	fresh, json bool
}

// What hostd ca init did.
const (
	caReused  = "reused"
	caAdopted = "adopted"
	caCreated = "created"
)

// caInit is what hostd ca init did, as --json prints it.
type caInit struct {
	Action  string    `json:"action"`
	From    string    `json:"from,omitempty"`
	Subject string    `json:"subject"`
	Cert    string    `json:"cert"`
	Expires time.Time `json:"expires"`
	SHA256  string    `json:"sha256"`
	Config  string    `json:"config"`
}

func (o *caInitOptions) run(cmd *cobra.Command, _ []string) error {
	dir, td := pki.Dir(o.Town()), o.Viper.GetString("trust_domain")
	c, err := pki.Open(dir, td)
	res := caInit{Action: caReused}
	if errors.Is(err, fs.ErrNotExist) {
		c, res.Action, res.From, err = o.initCA(dir, td)
	}
	if err != nil {
		return err
	}
	rt := state.For(o.Town())
	if err := rt.Ensure(); err != nil {
		return fmt.Errorf("the CA is ready, but hostd's runtime directory is not: %w", err)
	}
	res.Subject, res.Cert, res.Expires = c.Cert.Subject.CommonName, filepath.Join(c.Dir, pki.CertFile), c.Cert.NotAfter
	res.SHA256, res.Config = hex.EncodeToString(c.Fingerprint()), rt.Config()
	if o.json {
		return command.EncodeJSON(cmd.OutOrStdout(), res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n  certificate: %s\n  expires:     %s\n  config:      %s (hostd serve's settings, optional)\n",
		o.how(res), res.Subject, res.Cert, res.Expires.Format(time.RFC3339), res.Config)
	return nil
}

// initCA adopts a CA into dir, the one in --from or gt-proxy-server's,
// or creates one there; action says which, from whence.
func (o *caInitOptions) initCA(dir, trustDomain string) (ca *pki.CA, action, from string, err error) {
	proxy := ProxyCADir()
	from = o.from
	if from == "" && !o.fresh && proxy != dir && command.FileExists(filepath.Join(proxy, pki.CertFile)) {
		from = proxy
	}
	if from != "" {
		ca, err = pki.Adopt(from, dir, trustDomain)
		return ca, caAdopted, from, err
	}
	ca, _, err = pki.Init(dir, trustDomain)
	return ca, caCreated, "", err
}

// how says in words what ca init did, and where it looked.
func (o *caInitOptions) how(r caInit) string {
	switch {
	case r.Action == caReused:
		return "reusing existing CA"
	case r.Action == caAdopted:
		return "adopted the CA of " + r.From + " (the certificates it issued stay valid):"
	case o.fresh:
		return "created CA"
	}
	return fmt.Sprintf("created CA (none in the town, nor gt-proxy-server's at %s; to adopt one kept elsewhere, move this one away and run 'hostd ca init --from DIR'):", ProxyCADir())
}

// ProxyCADir is where gt-proxy-server keeps its CA for this user.
func ProxyCADir() string {
	home, _ := os.UserHomeDir()
	return pki.ProxyCADir(home)
}
