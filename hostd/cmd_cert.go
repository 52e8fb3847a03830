package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

func newCertCmd(a *app) *cobra.Command {
	cert := &cobra.Command{Use: "cert", Short: "Issue, revoke and list polecat certificates"}
	cert.AddCommand(newCertIssueCmd(a), newCertRevokeCmd(a), newCertListCmd(a))
	return cert
}

// certIssueOptions are hostd cert issue's flags.
type certIssueOptions struct {
	*app
	ttl time.Duration
	out string
}

func newCertIssueCmd(a *app) *cobra.Command {
	o := &certIssueOptions{app: a}
	cmd := &cobra.Command{
		Use:   "issue <rig>/<name>",
		Short: "Issue a polecat certificate: writes client.crt, client.key and ca.crt",
		Long: `Issue a certificate for one polecat. The identity goes into a URI SAN
(spiffe://<trust-domain>/rig/<rig>/polecat/<name>), which is all hostd reads
for authorization; the CN gt-<rig>-<name> is kept for compatibility. Rig
names match [A-Za-z0-9_-]+, polecat names [A-Za-z0-9_]+.

Prefer 'hostd token create' with 'gt-agent up --join' where you can: then the
private key is made inside the container and never copied.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().DurationVar(&o.ttl, "ttl", pki.DefaultTTL, "certificate lifetime")
	cmd.Flags().StringVar(&o.out, "out", ".", "directory to write client.crt, client.key and ca.crt into")
	return cmd
}

func (o *certIssueOptions) run(cmd *cobra.Command, args []string) error {
	id, c, err := o.openCAFor(args[0])
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := c.NewClientKeyPair(id, o.ttl)
	if err != nil {
		return err
	}
	dir, err := writeClientFiles(o.out, certPEM, keyPEM, c.CertPEM())
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "issued a certificate for %s, valid for %v\nGT_PROXY_CERT=%s\nGT_PROXY_KEY=%s\nGT_PROXY_CA=%s\n",
		id, o.ttl, filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"), filepath.Join(dir, "ca.crt"))
	return nil
}

// writeClientFiles writes a polecat's client.crt, client.key and ca.crt
// into dir, made if need be, and returns dir's absolute path.
func writeClientFiles(dir string, certPEM, keyPEM, caPEM []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"client.crt", certPEM, 0o644}, {"client.key", keyPEM, 0o600}, {"ca.crt", caPEM, 0o644}} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return "", fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	return abs, nil
}

func newCertRevokeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <rig>/<name> | <serial>",
		Short: "Revoke a polecat's certificates (or one by serial) and close its live tunnel",
		Long: `Revoke a polecat by name: every certificate of it issued until now,
including any Gas Town's own tools issued from the same CA (a cut-off kept in
<town>/.runtime/ca/revoked.json), and each unexpired one recorded. Or revoke
one certificate by its hex serial. A revoked certificate cannot renew.

The revocation is written beside the CA under the lock renewals take, and
survives restarts. A running hostd refuses new handshakes at once, closes the
polecat's live tunnels and shows it revoked; it notices within a second even
if this command is interrupted before it tells the daemon. A certificate
issued to the polecat afterwards (hostd cert issue, a join token) works.`,
		Args: cobra.ExactArgs(1),
		RunE: a.runCertRevoke,
	}
}

func (a *app) runCertRevoke(cmd *cobra.Command, args []string) error {
	c, err := a.openCA()
	if err != nil {
		return err
	}
	recs, err := c.Revoke(args[0])
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for _, r := range recs {
		fmt.Fprintf(out, "revoked %s (%s)\n", r.Serial, r.Identity)
	}
	if id, err := wire.ParseIdentity(args[0]); err == nil {
		fmt.Fprintf(out, "revoked every certificate of %s issued until now\n", id)
	}
	return a.reloadRevocations(cmd.Context(), out)
}

// reloadRevocations tells a running hostd to apply the revocations now,
// and says what it closed.
func (a *app) reloadRevocations(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := api.NewClient(a.town()).ReloadRevocations(ctx)
	switch {
	case errors.Is(err, api.ErrNotRunning):
		fmt.Fprintln(out, "hostd is not running; the revocation applies when it starts")
	case err != nil:
		return fmt.Errorf("revocation recorded, but telling hostd failed: %w", err)
	default:
		fmt.Fprintf(out, "closed %d live tunnel(s)\n", n)
	}
	return nil
}

func newCertListCmd(a *app) *cobra.Command {
	return showCmd(&cobra.Command{
		Use:   "list",
		Short: "List issued certificates: valid, expiring, expired and revoked",
		Args:  cobra.NoArgs,
	}, a.certRecords, printCerts, printCertsJSON)
}

// certRecords are the certificates the CA has issued.
func (a *app) certRecords(context.Context) ([]pki.Record, error) {
	c, err := a.openCA()
	if err != nil {
		return nil, err
	}
	return c.Records()
}

// printCertsJSON prints the records, each with its status now.
func printCertsJSON(w io.Writer, recs []pki.Record) error {
	now := time.Now()
	type row struct {
		pki.Record
		Status string `json:"status"`
	}
	rows := make([]row, 0, len(recs))
	for _, r := range recs {
		rows = append(rows, row{r, r.Status(now)})
	}
	return json.NewEncoder(w).Encode(rows)
}

// printCerts prints the records as a table, each with its status now.
func printCerts(w io.Writer, recs []pki.Record) error {
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLECAT\tSERIAL\tSTATUS\tSOURCE\tEXPIRES")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Identity, shortSerial(r.Serial), r.Status(now), r.Source, r.NotAfter.Local().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}

func shortSerial(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
