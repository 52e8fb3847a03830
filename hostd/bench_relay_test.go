package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/polecat-sidecar/sidecar/hostd/pki"
	"github.com/polecat-sidecar/sidecar/tunnel/tunneltest"
)

// Relay benchmarks, each in one run:
//   impl=direct   the stand-in command run directly (no relay at all)
//   impl=ours     the gt shim -> gt-agent -> tunnel -> hostd -> command
//   impl=percall  what Gas Town's proxy does today: a fresh client process
//                 makes a fresh mTLS HTTPS connection and one JSON POST per
//                 command, and the server buffers the whole output
// rtt=N is a round-trip delay injected between container and host by a
// userspace relay (the same relay for ours and percall).

// perCallEnv switches the test binary into the per-call client.
const perCallEnv = "SIDECAR_PERCALL_URL"

type perCallResponse struct {
	Stdout   []byte `json:"stdout"`
	Stderr   []byte `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// perCallClient is the baseline's client: one connection, one POST.
func perCallClient(args []string) int {
	cert, err := tls.LoadX509KeyPair(os.Getenv("SIDECAR_PERCALL_CERT"), os.Getenv("SIDECAR_PERCALL_KEY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 255
	}
	caPEM, _ := os.ReadFile(os.Getenv("SIDECAR_PERCALL_CA"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS13}}}
	body, _ := json.Marshal(map[string][]string{"argv": args})
	resp, err := hc.Post(os.Getenv(perCallEnv), "application/json", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 255
	}
	defer resp.Body.Close()
	var r perCallResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 255
	}
	os.Stdout.Write(r.Stdout)
	os.Stderr.Write(r.Stderr)
	return r.ExitCode
}

// perCallServer is the baseline's server, with hostd's CA and certificate.
func perCallServer(b *testing.B, r *relayRig, fake string) string {
	ca, err := pki.Open(pki.Dir(r.tw.dir), "")
	if err != nil {
		b.Fatal(err)
	}
	cert, err := ca.ServerCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.Pool(),
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13})
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct{ Argv []string }
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil || len(in.Argv) < 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		cmd := exec.Command(fake, in.Argv[1:]...)
		cmd.Dir = r.tw.dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		_ = json.NewEncoder(w).Encode(perCallResponse{out.Bytes(), errb.Bytes(), cmd.ProcessState.ExitCode()})
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// latencies runs op once per iteration and reports p50 and p99.
func latencies(b *testing.B, op func() error) {
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-us")
}

func runQuiet(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// BenchmarkRelayRoundTrip: a trivial command (the stand-in exiting 0).
func BenchmarkRelayRoundTrip(b *testing.B) {
	fake, _ := filepath.Abs("testdata/fake-gt.sh")
	r := newRelayRig(b, rigOpts{viaRelay: true})
	pcRelay := tunneltest.NewRelay(b, perCallServer(b, r, fake))
	self, _ := os.Executable()
	for _, rtt := range []time.Duration{0, 10 * time.Millisecond} {
		name := fmt.Sprintf("rtt=%dms", rtt.Milliseconds())
		b.Run(name+"/impl=direct", func(b *testing.B) {
			latencies(b, func() error { return runQuiet(exec.Command(fake, "status", "exit", "0")) })
		})
		b.Run(name+"/impl=ours", func(b *testing.B) {
			r.relay.SetDelay(rtt / 2)
			defer r.relay.SetDelay(0)
			latencies(b, func() error { return runQuiet(r.command("gt", "status", "exit", "0")) })
		})
		b.Run(name+"/impl=percall", func(b *testing.B) {
			pcRelay.SetDelay(rtt / 2)
			defer pcRelay.SetDelay(0)
			latencies(b, func() error {
				cmd := exec.Command(self, "gt", "status", "exit", "0")
				cmd.Env = append(os.Environ(), perCallEnv+"=https://localhost:"+portOf(pcRelay.Addr)+"/v1/exec",
					"SIDECAR_PERCALL_CERT="+filepath.Join(r.certs, "client.crt"), "SIDECAR_PERCALL_KEY="+filepath.Join(r.certs, "client.key"),
					"SIDECAR_PERCALL_CA="+filepath.Join(r.certs, "ca.crt"))
				return runQuiet(cmd)
			})
		})
	}
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// BenchmarkRelayStdout: 64 MiB of a command's stdout, relayed or not.
func BenchmarkRelayStdout(b *testing.B) {
	const size = 64 << 20
	fake, _ := filepath.Abs("testdata/fake-gt.sh")
	r := newRelayRig(b, rigOpts{})
	drain := func(cmd *exec.Cmd) error {
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil || n != size {
			return fmt.Errorf("%d bytes, %v", n, err)
		}
		return nil
	}
	b.Run("impl=direct", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := drain(exec.Command(fake, "status", "zeros", strconv.Itoa(size))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=ours", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := drain(r.command("gt", "status", "zeros", strconv.Itoa(size))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
