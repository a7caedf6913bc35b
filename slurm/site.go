package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Site is what decides a pending job's place on a live cluster, as its
// commands report it: slurmctld's settings (`scontrol show config`), the
// partitions (`scontrol show partition -o`), the nodes (sinfo), and from
// slurmdbd the QOS and the user's associations with their accrual limits
// (`sacctmgr -nP show qos`, `show assoc`). Site.SlurmConf renders the
// settings the simulator models as slurm.conf lines (sim.ParseSlurmConf
// reads them); the meaning for chains is the simulator's (sim.Explain).
type Site struct {
	Cluster string `json:"cluster"` // ClusterName
	Version string `json:"version"` // SLURM_VERSION
	User    string `json:"user"`    // whose associations were read
	// Config is `scontrol show config`: setting → value, "(null)" read as "".
	Config map[string]string `json:"config"`
	// Partitions are `scontrol show partition -o` records (Key → value).
	Partitions []map[string]string `json:"partitions"`
	Nodes      []provisioner.Node  `json:"nodes"`
	QOS        []QOS               `json:"qos"`
	// Associations are the user's, then their accounts' own (User "").
	Associations []Association `json:"associations"`
	// AccountingErr says why the QOS and associations could not be read
	// (no slurmdbd, or it did not answer); "" when they were.
	AccountingErr string `json:"accounting_error,omitempty"`
}

// QOS is one quality of service's priority and accrual limits.
type QOS struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
	// MaxJobsAccruePerUser and PerAccount (sacctmgr's MaxJobsAccruePU and
	// MaxJobsAccruePA) and GrpJobsAccrue: how many pending jobs accrue age
	// at once (0: no limit).
	MaxJobsAccruePerUser    int      `json:"max_jobs_accrue_per_user,omitempty"`
	MaxJobsAccruePerAccount int      `json:"max_jobs_accrue_per_account,omitempty"`
	GrpJobsAccrue           int      `json:"grp_jobs_accrue,omitempty"`
	Flags                   []string `json:"flags,omitempty"` // e.g. NoReserve
}

// Association is one association's accrual limits and QOS.
type Association struct {
	Account       string   `json:"account"`
	User          string   `json:"user,omitempty"`
	Partition     string   `json:"partition,omitempty"`
	MaxJobsAccrue int      `json:"max_jobs_accrue,omitempty"` // pending jobs of the association that accrue age at once (0: no limit)
	GrpJobsAccrue int      `json:"grp_jobs_accrue,omitempty"` // the same for the association and its children together
	DefaultQOS    string   `json:"default_qos,omitempty"`
	QOS           []string `json:"qos,omitempty"`
}

// The sacctmgr formats ParseQOS and ParseAssociations read.
const (
	QOSFormat   = "Name,Priority,MaxJobsAccruePU,MaxJobsAccruePA,GrpJobsAccrue,Flags"
	AssocFormat = "Account,User,Partition,MaxJobsAccrue,GrpJobsAccrue,DefaultQOS,QOS"
)

// Site reads the live settings of the cluster for user (the Client's
// Self when ""). The QOS and associations come from slurmdbd: when it is
// absent or does not answer, Site returns the rest with AccountingErr set.
func (c *Client) Site(ctx context.Context, user string) (*Site, error) {
	if user == "" {
		user = c.cfg.Self
	}
	if !validName(user) {
		return nil, fmt.Errorf("slurm: user %q: not a user name", user)
	}
	s := &Site{User: user}
	var err error
	if s.Config, err = c.ControllerConfig(ctx); err != nil {
		return nil, err
	}
	s.Cluster, s.Version = s.Config["ClusterName"], s.Config["SLURM_VERSION"]
	out, err := c.run(ctx, "scontrol", []string{"show", "partition", "-o"}, runOpts{})
	if err != nil {
		return nil, err
	}
	if s.Partitions, err = ParsePartitionRecords(out); err != nil {
		return nil, err
	}
	if s.Nodes, err = c.Nodes(ctx); err != nil {
		return nil, err
	}
	if err := c.siteAccounting(ctx, s); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.AccountingErr = err.Error()
	}
	return s, nil
}

// siteAccounting reads the QOS and the user's associations, then their
// accounts' own (GrpJobsAccrue is set there).
func (c *Client) siteAccounting(ctx context.Context, s *Site) error {
	out, err := c.run(ctx, "sacctmgr", []string{"-nP", "show", "qos", "format=" + QOSFormat}, runOpts{})
	if err != nil {
		return err
	}
	if s.QOS, err = ParseQOS(out); err != nil {
		return err
	}
	if out, err = c.run(ctx, "sacctmgr", []string{"-nP", "show", "assoc", "where", "user=" + s.User, "format=" + AssocFormat}, runOpts{}); err != nil {
		return err
	}
	if s.Associations, err = ParseAssociations(out); err != nil {
		return err
	}
	var accounts []string
	for _, a := range s.Associations {
		if validName(a.Account) && !slices.Contains(accounts, a.Account) {
			accounts = append(accounts, a.Account)
		}
	}
	if len(accounts) == 0 {
		return nil
	}
	if out, err = c.run(ctx, "sacctmgr", []string{"-nP", "show", "assoc", "where", "account=" + strings.Join(accounts, ","), "format=" + AssocFormat}, runOpts{}); err != nil {
		return err
	}
	own, err := ParseAssociations(out)
	if err != nil {
		return err
	}
	for _, a := range own {
		if a.User == "" && a.Partition == "" {
			s.Associations = append(s.Associations, a)
		}
	}
	return nil
}

// validName reports whether s may be passed to sacctmgr as a user or
// account name: no separator, space or '=' that would change the query.
func validName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '@' || c == '$') {
			return false
		}
	}
	return true
}

// ParseConfig parses `scontrol show config`: one "Key = Value" line per
// setting (the first occurrence of a key wins; later sections of the
// output, such as the cgroup settings, repeat none of slurmctld's). Other
// lines (the header, section titles, "Slurmctld(primary) at … is UP") are
// skipped. "(null)" reads as "". Output without a single setting is an
// error: that is not scontrol's.
func ParseConfig(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range lines(b) {
		k, v, ok := strings.Cut(l, " = ")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n") {
			continue
		}
		if _, seen := out[k]; seen {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "(null)" {
			v = ""
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("scontrol show config: no \"Key = Value\" line in %.80q", b)
	}
	return out, nil
}

// ParsePartitionRecords parses `scontrol show partition -o`: one
// partition per line as Key=Value fields (the reading rules of
// ParseScontrolJob), each with a PartitionName.
func ParsePartitionRecords(b []byte) ([]map[string]string, error) {
	return parseScontrolRecords(b, "PartitionName", "No partitions in the system")
}

// sacctmgrRows splits `sacctmgr -nP` output into rows of want fields.
func sacctmgrRows(what string, b []byte, want int) ([][]string, error) {
	var out [][]string
	for i, l := range lines(b) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Split(l, "|")
		if len(f) != want {
			return nil, fmt.Errorf("sacctmgr show %s: line %d: %d fields, want %d", what, i+1, len(f), want)
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		out = append(out, f)
	}
	return out, nil
}

// limitNum reads a sacctmgr limit: "" (none) is 0.
func limitNum(what, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a count", what, s)
	}
	return n, nil
}

// ParseQOS parses `sacctmgr -nP show qos format=QOSFormat`.
func ParseQOS(b []byte) ([]QOS, error) {
	rows, err := sacctmgrRows("qos", b, 6)
	if err != nil {
		return nil, err
	}
	out := make([]QOS, 0, len(rows))
	for i, f := range rows {
		q := QOS{Name: f[0]}
		if q.Name == "" {
			return nil, fmt.Errorf("sacctmgr show qos: row %d: no name", i+1)
		}
		var errs [4]error
		q.Priority, errs[0] = limitNum("Priority", f[1])
		q.MaxJobsAccruePerUser, errs[1] = limitNum("MaxJobsAccruePU", f[2])
		q.MaxJobsAccruePerAccount, errs[2] = limitNum("MaxJobsAccruePA", f[3])
		q.GrpJobsAccrue, errs[3] = limitNum("GrpJobsAccrue", f[4])
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("sacctmgr show qos: QOS %s: %w", q.Name, err)
		}
		if f[5] != "" {
			q.Flags = strings.Split(f[5], ",")
		}
		out = append(out, q)
	}
	return out, nil
}

// ParseAssociations parses `sacctmgr -nP show assoc format=AssocFormat`.
func ParseAssociations(b []byte) ([]Association, error) {
	rows, err := sacctmgrRows("assoc", b, 7)
	if err != nil {
		return nil, err
	}
	out := make([]Association, 0, len(rows))
	for i, f := range rows {
		a := Association{Account: f[0], User: f[1], Partition: f[2], DefaultQOS: f[5]}
		if a.Account == "" {
			return nil, fmt.Errorf("sacctmgr show assoc: row %d: no account", i+1)
		}
		var e1, e2 error
		a.MaxJobsAccrue, e1 = limitNum("MaxJobsAccrue", f[3])
		a.GrpJobsAccrue, e2 = limitNum("GrpJobsAccrue", f[4])
		if err := errors.Join(e1, e2); err != nil {
			return nil, fmt.Errorf("sacctmgr show assoc: %s/%s: %w", a.Account, a.User, err)
		}
		if f[6] != "" {
			a.QOS = strings.Split(f[6], ",")
		}
		out = append(out, a)
	}
	return out, nil
}

// EnforcesLimits reports whether slurmctld enforces association and QOS
// limits (AccountingStorageEnforce holds "limits" or "safe", which implies
// it): without it an accrual limit set in slurmdbd changes nothing.
func (s *Site) EnforcesLimits() bool {
	for _, f := range strings.Split(s.Config["AccountingStorageEnforce"], ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f == "limits" || f == "safe" {
			return true
		}
	}
	return false
}

// AccrueLimit is how many of the user's pending jobs accrue age at once,
// and where that limit is set: the smallest of the user's associations'
// MaxJobsAccrue and their QOS's MaxJobsAccruePerUser (the default QOS of
// each association, "normal" when it names none), when slurmctld enforces
// limits. 0: no limit.
func (s *Site) AccrueLimit() (n int, from string) {
	if !s.EnforcesLimits() {
		return 0, ""
	}
	take := func(v int, where string) {
		if v > 0 && (n == 0 || v < n) {
			n, from = v, where
		}
	}
	for _, a := range s.Associations {
		if a.User != s.User {
			continue
		}
		take(a.MaxJobsAccrue, fmt.Sprintf("MaxJobsAccrue of association %s/%s", a.Account, a.User))
		qos := a.DefaultQOS
		if qos == "" {
			qos = "normal"
		}
		for _, q := range s.QOS {
			if q.Name == qos {
				take(q.MaxJobsAccruePerUser, "MaxJobsAccruePerUser of QOS "+q.Name)
			}
		}
	}
	return n, from
}

// confKeys are the slurm.conf settings SlurmConf carries over from
// `scontrol show config`: those the simulator models (sim.ParseSlurmConf).
var confKeys = []string{"SchedulerType", "SelectType", "SchedulerParameters", "PriorityType", "PriorityFlags",
	"PriorityWeightAge", "PriorityWeightFairShare", "PriorityWeightJobSize", "PriorityWeightPartition", "PriorityWeightQOS",
	"PriorityMaxAge", "PriorityDecayHalfLife", "PriorityCalcPeriod", "PriorityFavorSmall"}

// partKeys are the partition fields SlurmConf carries over.
var partKeys = []string{"Nodes", "MaxTime", "DefaultTime", "Default", "OverSubscribe", "PriorityJobFactor"}

// SlurmConf renders the settings the simulator models as slurm.conf lines:
// the scheduler and priority settings, one NodeName line per node (CPUs,
// GPUs as Gres) and one PartitionName line per partition that is up and
// has nodes. A value that a slurm.conf line cannot carry (white space, '#'
// or, in a name, '=') is an error naming it.
func (s *Site) SlurmConf() ([]byte, error) {
	var b bytes.Buffer
	word := func(what, v string) error {
		if strings.ContainsAny(v, " \t\r\n#") {
			return fmt.Errorf("slurm: site setting %s %q: not a slurm.conf value", what, v)
		}
		return nil
	}
	fmt.Fprintf(&b, "# read from cluster %s (Slurm %s)\n", s.Cluster, s.Version)
	for _, k := range confKeys {
		v, ok := s.Config[k]
		if !ok {
			continue
		}
		if err := word(k, v); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	for _, n := range s.Nodes {
		if err := word("node name", n.Name); err != nil || n.Name == "" || strings.Contains(n.Name, "=") {
			return nil, fmt.Errorf("slurm: node name %q: not a slurm.conf name", n.Name)
		}
		fmt.Fprintf(&b, "NodeName=%s CPUs=%d", n.Name, max(n.CPUs, 1))
		if n.GPUs > 0 {
			typ := ""
			if n.GPUType != "" && word("GPU type", n.GPUType) == nil && !strings.ContainsAny(n.GPUType, ":=,") {
				typ = n.GPUType + ":"
			}
			fmt.Fprintf(&b, " Gres=gpu:%s%d", typ, n.GPUs)
		}
		b.WriteByte('\n')
	}
	for _, p := range s.Partitions {
		name := p["PartitionName"]
		if err := word("partition name", name); err != nil || strings.Contains(name, "=") {
			return nil, fmt.Errorf("slurm: partition name %q: not a slurm.conf name", name)
		}
		if !strings.EqualFold(p["State"], "UP") || p["Nodes"] == "" || p["Nodes"] == "(null)" {
			continue
		}
		fmt.Fprintf(&b, "PartitionName=%s", name)
		for _, k := range partKeys {
			v, ok := p[k]
			if !ok {
				continue
			}
			if k == "DefaultTime" && strings.EqualFold(v, "NONE") {
				continue // no default: the partition's MaxTime applies
			}
			if err := word("partition "+name+" "+k, v); err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}
