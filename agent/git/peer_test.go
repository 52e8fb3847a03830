package git

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFindSocketOwner(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2696 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0
   1: 0100007F:D431 0100007F:2696 01 00000000:00000000 00:00000000 00000000  1001        0 2 1 0 20 4 30 10 -1
   2: 0100007F:2696 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1
`
	const table6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:D431 00000000000000000000000001000000:2696 01 00000000:00000000 00:00000000 00000000   33        0 4 1 0 20 4 30 10 -1
`
	cases := []struct {
		name, table, local, remote string
		uid                        int
		found                      bool
	}{
		{"client end", table, "127.0.0.1:54321", "127.0.0.1:9878", 1001, true},
		{"server end", table, "127.0.0.1:9878", "127.0.0.1:54321", 1000, true},
		{"absent", table, "127.0.0.1:1", "127.0.0.1:9878", 0, false},
		{"ipv6 loopback", table6, "[::1]:54321", "[::1]:9878", 33, true},
		{"garbage", "header\nnot a line\n 0: zz:zz yy:yy 01 x x x x notanumber\n", "127.0.0.1:1", "127.0.0.1:2", 0, false},
	}
	for _, c := range cases {
		uid, found, err := findSocketOwner(strings.NewReader(c.table), netip.MustParseAddrPort(c.local), netip.MustParseAddrPort(c.remote))
		if err != nil || uid != c.uid || found != c.found {
			t.Errorf("%s: uid %d found %v err %v; want %d %v", c.name, uid, found, err, c.uid, c.found)
		}
	}
	// A matching line with a bad uid is an error, not uid 0.
	bad := "h\n 0: 0100007F:0001 0100007F:0002 01 0:0 0:0 0 -5 0 1\n"
	if _, _, err := findSocketOwner(strings.NewReader(bad), netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")); err == nil {
		t.Error("negative uid accepted")
	}
}

func FuzzFindSocketOwner(f *testing.F) {
	f.Add("h\n 0: 0100007F:2696 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000 0 3\n")
	f.Add("h\n 0: 00000000000000000000000001000000:D431 00000000000000000000000001000000:2696 01 0 0 0 33\n")
	f.Fuzz(func(t *testing.T, table string) {
		_, _, _ = findSocketOwner(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:9878"), netip.MustParseAddrPort("127.0.0.1:54321"))
	})
}

// TestOnlyUIDs connects to a real loopback listener as this user and, when
// the test runs as root, as another user, and checks who is admitted.
func TestOnlyUIDs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	admit := OnlyUIDs(os.Getuid())
	verdicts := make(chan error, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			verdicts <- admit(c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-verdicts; err != nil {
		t.Fatalf("own uid refused: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("connecting as another user needs root")
	}
	// nobody (65534) connects with bash's /dev/tcp, holding the
	// connection open until it is judged.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cmd := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; sleep 2")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case err := <-verdicts:
		if err == nil || !strings.Contains(err.Error(), "uid 65534 refused") {
			t.Fatalf("another user's connection: %v, want refused naming uid 65534", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another user's connection never arrived")
	}
}
