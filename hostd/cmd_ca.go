package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
)

func newCACmd(a *app) *cobra.Command {
	var o caInitOptions
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

It says which, and where it looked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, a) },
	}
	initCmd.Flags().StringVar(&o.from, "from", "", "adopt the CA in this directory (its ca.crt and ca.key) when the town has none (default: gt-proxy-server's, if it has one)")
	initCmd.Flags().BoolVar(&o.fresh, "new", false, "create a new CA when the town has none, even if gt-proxy-server has one (a throw-away town)")
	initCmd.MarkFlagsMutuallyExclusive("from", "new")
	ca.AddCommand(initCmd)
	return ca
}

// caInitOptions are hostd ca init's flags.
type caInitOptions struct {
	from  string
	fresh bool
}

func (o *caInitOptions) run(cmd *cobra.Command, a *app) error {
	dir, td := pki.Dir(a.town()), a.v.GetString("trust_domain")
	c, err := pki.Open(dir, td)
	how := "reusing existing CA"
	if errors.Is(err, fs.ErrNotExist) {
		c, how, err = o.initCA(dir, td)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n  certificate: %s\n  expires:     %s\n", how,
		c.Cert.Subject.CommonName, filepath.Join(c.Dir, pki.CertFile), c.Cert.NotAfter.Format(time.RFC3339))
	return nil
}

// initCA adopts a CA into dir, the one in --from or gt-proxy-server's,
// or creates one there; how says which, and where it looked.
func (o *caInitOptions) initCA(dir, trustDomain string) (ca *pki.CA, how string, err error) {
	home, _ := os.UserHomeDir()
	proxy := pki.ProxyCADir(home)
	from := o.from
	if from == "" && !o.fresh && proxy != dir && fileExists(filepath.Join(proxy, pki.CertFile)) {
		from = proxy
	}
	if from != "" {
		ca, err = pki.Adopt(from, dir, trustDomain)
		return ca, "adopted the CA of " + from + " (the certificates it issued stay valid):", err
	}
	ca, _, err = pki.Init(dir, trustDomain)
	if o.fresh {
		return ca, "created CA", err
	}
	return ca, fmt.Sprintf("created CA (none in the town, nor gt-proxy-server's at %s; to adopt one kept elsewhere, move this one away and run 'hostd ca init --from DIR'):", proxy), err
}
