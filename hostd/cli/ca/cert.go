package ca

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polecat-sidecar/sidecar/hostd/api"
	"github.com/polecat-sidecar/sidecar/hostd/cli/command"
	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/internal/atomicfile"
	"github.com/polecat-sidecar/sidecar/tunnel/wire"
)

// NewCertCmd is hostd cert: issue, revoke and list.
func NewCertCmd(a *command.App) *cobra.Command {
	cert := &cobra.Command{Use: "cert", Short: "Issue, revoke and list polecat certificates"}
	cert.AddCommand(newCertIssueCmd(a), newCertRevokeCmd(a), newCertListCmd(a))
	return cert
}

// certIssueOptions are hostd cert issue's flags.
type certIssueOptions struct {
	*command.App
	ttl  time.Duration
	out  string
	json bool
}

func newCertIssueCmd(a *command.App) *cobra.Command {
	o := &certIssueOptions{App: a}
	cmd := &cobra.Command{
		Use:   "issue <rig>/<name>",
		Short: "Issue a polecat certificate: writes client.crt, client.key and ca.crt",
		Long: `Issue a certificate for one polecat. The identity goes into a URI SAN
(spiffe://<trust-domain>/rig/<rig>/polecat/<name>), which is all hostd reads
for authorization; the CN gt-<rig>-<name> is kept for compatibility. The
` + wire.NameRule + `.

Prefer 'hostd token create' with 'gt-agent up --join' where you can: then the
private key is made inside the container and never copied.

With --json it prints one object: identity, serial (hex), not_after (when
the certificate expires, RFC 3339), and cert, key and ca, the absolute paths
of the files written.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().DurationVar(&o.ttl, "ttl", pki.DefaultTTL, "certificate lifetime")
	cmd.Flags().StringVar(&o.out, "out", ".", "directory to write client.crt, client.key and ca.crt into")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// issuedFiles is what hostd cert issue --json prints.
type issuedFiles struct {
	Identity wire.Identity `json:"identity"`
	Serial   string        `json:"serial"`
	NotAfter time.Time     `json:"not_after"`
	Cert     string        `json:"cert"`
	Key      string        `json:"key"`
	CA       string        `json:"ca"`
}

func (o *certIssueOptions) run(cmd *cobra.Command, args []string) error {
	id, c, err := o.OpenCAFor(args[0])
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := c.NewClientKeyPair(id, o.ttl)
	if err != nil {
		return err
	}
	cert, err := pki.ParseCertPEM(certPEM)
	if err != nil {
		return fmt.Errorf("reading the certificate just issued: %w", err)
	}
	dir, err := writeClientFiles(o.out, certPEM, keyPEM, c.CertPEM())
	if err != nil {
		return err
	}
	res := issuedFiles{Identity: id, Serial: pki.SerialOf(cert), NotAfter: cert.NotAfter,
		Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key"), CA: filepath.Join(dir, "ca.crt")}
	if o.json {
		return command.EncodeJSON(cmd.OutOrStdout(), res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "issued a certificate for %s, valid for %v\nGT_PROXY_CERT=%s\nGT_PROXY_KEY=%s\nGT_PROXY_CA=%s\n",
		id, o.ttl, res.Cert, res.Key, res.CA)
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

// certRevokeOptions are hostd cert revoke's flags.
type certRevokeOptions struct {
	*command.App
	force, json bool
}

func newCertRevokeCmd(a *command.App) *cobra.Command {
	o := &certRevokeOptions{App: a}
	cmd := &cobra.Command{
		Use:   "revoke <rig>/<name> | <serial>",
		Short: "Revoke a polecat's certificates (or one by serial) and close its live tunnel",
		Long: `Revoke a polecat by name: every certificate of it issued until now,
including any Gas Town's own tools issued from the same CA (a cut-off kept in
<town>/.runtime/ca/revoked.json), and each unexpired one recorded. Or revoke
one certificate by its hex serial. A revoked certificate cannot renew.

A name this town's CA never issued a certificate to, and that a running
hostd has not seen connect, is refused, as a typo would be: 'hostd cert
list' shows the names issued, 'hostd status' those connected. Gas Town's
own tools record nothing here, so to revoke a name only they issued, that
has not connected, add --force.

The revocation is written beside the CA under the lock renewals take, and
survives restarts. A running hostd refuses new handshakes at once, closes the
polecat's live tunnels and shows it revoked; it notices within a second even
if this command is interrupted before it tells the daemon. A certificate
issued to the polecat afterwards (hostd cert issue, a join token) works.

With --json it prints one object: identity (when revoking by name) or
serial; revoked, the records it marked revoked (serial, identity,
not_before, not_after, source, revoked_at); hostd_running, whether a hostd
answered (if not, the revocation applies when it starts); and
closed_tunnels, how many live tunnels it closed.`,
		Args: cobra.ExactArgs(1),
		RunE: o.run,
	}
	cmd.Flags().BoolVar(&o.force, "force", false, "revoke a name this town's CA never issued and no running hostd has seen connect (one only Gas Town's own tools issued)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// revocation is what hostd cert revoke did, as --json prints it.
type revocation struct {
	Identity *wire.Identity `json:"identity,omitempty"`
	Serial   string         `json:"serial,omitempty"`
	Revoked  []pki.Record   `json:"revoked"`
	command.Applied
}

func (o *certRevokeOptions) run(cmd *cobra.Command, args []string) error {
	c, err := o.OpenCA()
	if err != nil {
		return err
	}
	res := revocation{Serial: args[0]}
	if id, err := wire.ParseIdentity(args[0]); err == nil {
		res.Identity, res.Serial = &id, ""
		if err := o.checkKnown(cmd.Context(), c, id); err != nil {
			return err
		}
	}
	if res.Revoked, err = c.Revoke(args[0]); err != nil {
		return err
	}
	if res.Revoked == nil {
		res.Revoked = []pki.Record{}
	}
	if res.Applied, err = o.ApplyRevocations(cmd.Context()); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		return command.EncodeJSON(out, res)
	}
	for _, r := range res.Revoked {
		fmt.Fprintf(out, "revoked %s (%s)\n", r.Serial, r.Identity)
	}
	if res.Identity != nil {
		fmt.Fprintf(out, "revoked every certificate of %s issued until now\n", res.Identity)
	}
	res.Print(out)
	return nil
}

// checkKnown refuses to revoke a name neither the CA issued nor a running
// hostd has seen connect (with a certificate Gas Town's own tools issued,
// which the CA does not record), unless --force: a typo would otherwise
// leave a revoked name nobody had.
func (o *certRevokeOptions) checkKnown(ctx context.Context, c *pki.CA, id wire.Identity) error {
	if o.force {
		return nil
	}
	issued, err := c.Issued(id)
	if err != nil {
		return fmt.Errorf("reading the names the CA issued: %w", err)
	}
	if issued {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := o.Client().Polecat(ctx, api.Identity(id)); err == nil {
		return nil
	}
	return fmt.Errorf("this town's CA never issued a certificate to %s and no running hostd has seen it connect, so nothing was revoked: check the name ('hostd cert list' shows those issued, 'hostd status' those connected); to revoke a name only Gas Town's own tools issued, add --force", id)
}

func newCertListCmd(a *command.App) *cobra.Command {
	return command.ShowCmd(&cobra.Command{
		Use:   "list",
		Short: "List issued certificates: valid, expiring, expired and revoked",
		Args:  cobra.NoArgs,
	}, certRecords(a), printCerts, printCertsJSON)
}

// certRecords fetches the certificates a's CA has issued.
func certRecords(a *command.App) func(context.Context) ([]pki.Record, error) {
	return func(context.Context) ([]pki.Record, error) {
		c, err := a.OpenCA()
		if err != nil {
			return nil, err
		}
		return c.Records()
	}
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
