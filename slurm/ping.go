package slurm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultSlurmConf is where Slurm's commands look without SLURM_CONF
// (Debian's packages; a source build's default is PREFIX/etc/slurm.conf).
const DefaultSlurmConf = "/etc/slurm/slurm.conf"

// DefaultPingTimeout bounds Ping's wait for a controller.
const DefaultPingTimeout = 2 * time.Second

// Controller is one slurmctld as slurm.conf names it.
type Controller struct {
	Host string // SlurmctldHost's name (or ControlMachine)
	Addr string // the address to dial: the "(addr)" of SlurmctldHost, ControlAddr, else Host
	Port int    // SlurmctldPort (the first of a range), default 6817
}

// String is "host:port", with the address when it differs from the name.
func (c Controller) String() string {
	hp := net.JoinHostPort(c.Addr, strconv.Itoa(c.Port))
	if c.Addr != c.Host {
		return c.Host + " (" + hp + ")"
	}
	return hp
}

// ReadControllers reads the controllers of a slurm.conf: its SlurmctldHost
// lines (primary first), or the older ControlMachine/ControlAddr, with
// SlurmctldPort. Include files are not followed; a configuration that names
// no controller gives none and no error.
func ReadControllers(path string) ([]Controller, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	port := 6817
	var ctls []Controller
	var machine, addr string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		for _, field := range strings.Fields(line) {
			k, v, ok := strings.Cut(field, "=")
			if !ok {
				continue
			}
			switch strings.ToLower(k) {
			case "slurmctldhost":
				name, a, _ := strings.Cut(v, "(")
				a = strings.TrimSuffix(a, ")")
				ctls = append(ctls, Controller{Host: name, Addr: cmpOr(a, name)})
			case "controlmachine":
				machine = v
			case "controladdr":
				addr = v
			case "slurmctldport":
				first, _, _ := strings.Cut(v, "-")
				if p, err := strconv.Atoi(first); err == nil && p > 0 && p < 65536 {
					port = p
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ctls) == 0 && machine != "" {
		ctls = append(ctls, Controller{Host: machine, Addr: cmpOr(addr, machine)})
	}
	for i := range ctls {
		ctls[i].Port = port
	}
	return ctls, nil
}

// ReadClusterName reads the ClusterName of a slurm.conf, lowercased as
// Slurm uses it ("" when the file does not set one; include files are not
// followed).
func ReadClusterName(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	name := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		for _, field := range strings.Fields(line) {
			if k, v, ok := strings.Cut(field, "="); ok && strings.EqualFold(k, "ClusterName") {
				name = strings.ToLower(v)
			}
		}
	}
	return name, sc.Err()
}

// confPath is the slurm.conf the client's commands read: Config.SlurmConf,
// else SLURM_CONF, else DefaultSlurmConf.
func (c *Client) confPath() string {
	if c.cfg.SlurmConf != "" {
		return c.cfg.SlurmConf
	}
	return cmpOr(os.Getenv("SLURM_CONF"), DefaultSlurmConf)
}

// ClusterName implements provisioner.ClusterNamer: the ClusterName of the
// client's slurm.conf (read once), so that a daemon given another
// cluster's slurm.conf acts on none of the chains registered on this one.
// "" when the file cannot be read (a configless client) or names none: the
// check is then off.
func (c *Client) ClusterName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cluster == nil {
		name, _ := ReadClusterName(c.confPath())
		c.cluster = &name
	}
	return *c.cluster
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Ping tells, within DefaultPingTimeout, whether a controller of the
// client's slurm.conf (Config.SlurmConf, else SLURM_CONF, else
// DefaultSlurmConf) accepts a connection: the chain commands ask before
// their first Slurm command, because with slurmctld down each squeue or
// sbatch spends about 10 s in Slurm's own connect retries. The error wraps
// ErrControllerDown (and so provisioner.ErrUnavailable) and names the
// controllers, the slurm.conf and how to choose another. A slurm.conf that
// cannot be read (a configless client) or names no controller is not an
// error: the commands themselves will say.
func (c *Client) Ping(ctx context.Context) error {
	conf := c.confPath()
	ctls, err := ReadControllers(conf)
	if err != nil || len(ctls) == 0 {
		return nil
	}
	timeout := c.cfg.PingTimeout
	if timeout <= 0 {
		timeout = DefaultPingTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	var errs []string
	for _, ctl := range ctls {
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ctl.Addr, strconv.Itoa(ctl.Port)))
		if err == nil {
			conn.Close()
			return nil
		}
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		errs = append(errs, fmt.Sprintf("%s: %v", ctl, err))
	}
	return fmt.Errorf("%w: %s (the SlurmctldHost of %s); for another cluster give its slurm.conf with --slurm-conf or SLURM_CONF",
		ErrControllerDown, strings.Join(errs, "; "), conf)
}

// Self is the user the client acts for (Config.Self, default the current
// user): the owner of the chains' jobs. The chain commands give it to the
// engine, cancel, recover and handoff, which never act on another user's job.
func (c *Client) Self() string { return c.cfg.Self }
