package slurm

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mirage-gpu/mirage/provisioner"
)

func TestReadControllers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		body string
		want []Controller
	}{
		{"ClusterName=x\nSlurmctldHost=ctl1(10.0.0.1)\nSlurmctldHost=ctl2 # backup\nSlurmctldPort=7000-7001\n",
			[]Controller{{"ctl1", "10.0.0.1", 7000}, {"ctl2", "ctl2", 7000}}},
		{"ControlMachine=old ControlAddr=192.168.1.5\n", []Controller{{"old", "192.168.1.5", 6817}}},
		{"#SlurmctldHost=commented\nslurmctldhost=lower\n", []Controller{{"lower", "lower", 6817}}},
		{"NodeName=n1 CPUs=4\n", nil},
	}
	for i, c := range cases {
		got, err := ReadControllers(write("c"+strconv.Itoa(i)+".conf", c.body))
		if err != nil || len(got) != len(c.want) {
			t.Errorf("case %d: %+v, %v; want %+v", i, got, err, c.want)
			continue
		}
		for k := range got {
			if got[k] != c.want[k] {
				t.Errorf("case %d: controller %d = %+v, want %+v", i, k, got[k], c.want[k])
			}
		}
	}
}

// TestClusterName: the ClusterName of a slurm.conf, lowercased (comments
// and other keys aside), read once per client; none without the key.
func TestClusterName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for body, want := range map[string]string{
		"ClusterName=LS6 # the A100s\nSlurmctldHost=ctl1\n": "ls6",
		"#ClusterName=old\nclustername=mirage\n":            "mirage",
		"SlurmctldHost=ctl1\n":                              "",
	} {
		p := filepath.Join(dir, strconv.Itoa(len(body))+".conf")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{SlurmConf: p, Self: "alice", Runner: &fakeRunner{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ClusterName(); got != want {
			t.Errorf("%q: cluster %q, want %q", body, got, want)
		}
		if err := os.WriteFile(p, []byte("ClusterName=changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := c.ClusterName(); got != want {
			t.Errorf("%q: read again: %q", body, got)
		}
	}
}

// TestPing: a controller that accepts connections answers; one whose port
// is closed gives ErrControllerDown at once, naming the address and the
// slurm.conf. Real sockets on 127.0.0.1, no Slurm.
func TestPing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client := func(port int) (*Client, string) {
		conf := filepath.Join(t.TempDir(), "slurm.conf")
		body := "SlurmctldHost=head(127.0.0.1)\nSlurmctldPort=" + strconv.Itoa(port) + "\n"
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{SlurmConf: conf, Runner: &ExecRunner{}})
		if err != nil {
			t.Fatal(err)
		}
		return c, conf
	}
	c, _ := client(ln.Addr().(*net.TCPAddr).Port)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("ping with the port open: %v", err)
	}
	// A closed port that stays closed: a TCP socket bound but never
	// listening refuses connections and keeps the port from being handed
	// to anything else meanwhile (closing a listener and reusing its port
	// raced with the parallel tests binding ephemeral ports).
	port := reservedClosedPort(t)
	c, conf := client(port)
	err = c.Ping(context.Background())
	if !errors.Is(err, ErrControllerDown) || !errors.Is(err, provisioner.ErrUnavailable) {
		t.Fatalf("ping with the port closed: %v, want ErrControllerDown", err)
	}
	for _, want := range []string{"head (127.0.0.1:" + strconv.Itoa(port) + ")", conf, "--slurm-conf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// A slurm.conf that cannot be read (a configless client): nothing to check.
	c2, _ := New(Config{SlurmConf: filepath.Join(t.TempDir(), "absent.conf"), Runner: &ExecRunner{}})
	if err := c2.Ping(context.Background()); err != nil {
		t.Errorf("ping without a readable slurm.conf: %v", err)
	}
}

// reservedClosedPort returns a 127.0.0.1 TCP port held by a socket that is
// bound but not listening (connections to it are refused) until the test ends.
func reservedClosedPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}
