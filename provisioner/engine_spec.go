package provisioner

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SpecPrefix starts the second token of a mirage job comment: the chain's
// specification, so that `mirage recover` can rebuild a chain that can go
// on from the backend alone (Slurm keeps comments in accounting with
// AccountingStoreFlags=job_comment).
const SpecPrefix = "mirage-spec="

// chainSpec is the part of a Chain carried in job comments (JSON, then
// base64url without padding, so the comment holds no spaces or commas).
// Every user can read a job's comment, so it carries nothing the user may
// want kept: not the recorded environment (Chain.Env: a recovered chain's
// segments get the daemon's), and since version 2 not the sbatch options
// (an --export=…,TOKEN=… or a --mail-user), only how many words they are
// (Opts): mirage recover asks for them. Version 1 (before #50) carried them
// in Args, which is still read.
type chainSpec struct {
	V         int      `json:"v"`
	Name      string   `json:"n,omitempty"`
	Script    string   `json:"s,omitempty"`
	Args      []string `json:"a,omitempty"` // version 1 only
	Opts      int      `json:"o,omitempty"` // version 2: how many sbatch option words the chain has
	WorkDir   string   `json:"d,omitempty"`
	Policy    string   `json:"p,omitempty"`
	Segments  int      `json:"k,omitempty"`
	Retries   int      `json:"r,omitempty"`
	Account   string   `json:"acct,omitempty"`
	Partition string   `json:"part,omitempty"`
	Limit     int64    `json:"t,omitempty"` // seconds
	Nodes     int      `json:"N,omitempty"`
	GPUs      int      `json:"g,omitempty"`
	Created   int64    `json:"c,omitempty"` // Unix seconds
	Workload  string   `json:"w,omitempty"`
	Cost      *GapCost `json:"cost,omitempty"`
	Signal    int64    `json:"sig,omitempty"` // the --signal lead, seconds
	Keeper    string   `json:"db,omitempty"`  // the state database that submitted the job (Chain.Keeper)
	Cluster   string   `json:"cl,omitempty"`  // the cluster (Chain.Cluster)
}

// MaxComment is the longest job comment Slurm accepts, in bytes: a
// longer one is rejected at submission.
const MaxComment = 1024

// ChainComment is the comment of segment (index, attempt) of ch: its tag
// first ("mirage:CHAIN/INDEX.ATTEMPT"), then the chain's specification,
// without its sbatch options (chainSpec).
func ChainComment(ch *Chain, index, attempt int) string {
	sp := chainSpec{V: 2, Name: ch.Name, Script: ch.Script, Opts: len(ch.Args), WorkDir: ch.WorkDir, Policy: ch.Policy, Segments: ch.Segments,
		Retries: ch.MaxRetries, Account: ch.Account, Partition: ch.Partition, Limit: int64(ch.TimeLimit / time.Second),
		Nodes: ch.Nodes, GPUs: ch.GPUs, Workload: ch.Workload, Cost: ch.Cost, Signal: int64(ch.SignalLead / time.Second),
		Keeper: ch.Keeper, Cluster: ch.Cluster}
	if !ch.Created.IsZero() {
		sp.Created = ch.Created.Unix()
	}
	b, err := json.Marshal(sp)
	if err != nil {
		panic(fmt.Sprintf("provisioner: marshal chain spec: %v", err)) // plain strings and ints: cannot fail
	}
	return MustTag(ch.ID, index, attempt) + " " + SpecPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// EndMark is the word mirage cancel adds to the comment of a chain's last
// job, in the backend's history, when it cancels the chain after that job
// ended (between segments): nothing else in Slurm would tell, after the
// state database is lost, that the chain did not simply stop there, and
// recover would offer it as recoverable. Only a job's owner (or an
// administrator) can change its comment.
const EndMark = "mirage-end=cancelled"

// MarkedCancelled says whether a job comment carries EndMark.
func MarkedCancelled(comment string) bool {
	return slices.Contains(strings.FieldsFunc(comment, func(r rune) bool { return strings.ContainsRune(" ,;\t\n", r) }), EndMark)
}

// CommentLimit is the longest comment ch's segments can carry (its tag at
// segment index 999999, attempt 99, its specification, a MAC and room for
// EndMark), for a
// chain not registered yet (an id of the usual length stands in for its
// own): what mirage submit checks against MaxComment.
func CommentLimit(ch *Chain) int {
	c := *ch
	if c.ID == "" {
		c.ID = "c-00000000-000000"
	}
	if c.Keeper == "" {
		c.Keeper = strings.Repeat("0", KeeperLen) // the database's, written at the first cycle
	}
	return len(ChainComment(&c, 999999, 99)) + len(" "+MACPrefix) + 2*macLen + len(" "+EndMark)
}

// ParseChainSpec reads the chain specification from a job comment written
// by ChainComment. It returns the chain (ID from the tag, State active;
// Args only from a version-1 comment, see SpecOptions) and false when the
// comment holds no tag or no readable specification.
func ParseChainSpec(comment string) (Chain, bool) {
	tag, ok := ParseTag(comment)
	if !ok {
		return Chain{}, false
	}
	sp, ok := readSpec(comment)
	if !ok {
		return Chain{}, false
	}
	c := Chain{ID: tag.Chain, Name: sp.Name, Script: sp.Script, Args: sp.Args, WorkDir: sp.WorkDir, Policy: sp.Policy, Segments: sp.Segments,
		MaxRetries: sp.Retries, Account: sp.Account, Partition: sp.Partition, TimeLimit: time.Duration(sp.Limit) * time.Second,
		Nodes: sp.Nodes, GPUs: sp.GPUs, State: ChainActive, Workload: sp.Workload, Cost: sp.Cost, SignalLead: time.Duration(sp.Signal) * time.Second,
		Keeper: sp.Keeper, Cluster: sp.Cluster}
	if sp.Created != 0 {
		c.Created = time.Unix(sp.Created, 0).UTC()
	}
	return c, true
}

// readSpec decodes the specification token of a job comment.
func readSpec(comment string) (chainSpec, bool) {
	i := strings.Index(comment, SpecPrefix)
	if i < 0 {
		return chainSpec{}, false
	}
	s := comment[i+len(SpecPrefix):]
	if j := strings.IndexAny(s, " ,;\t\n"); j >= 0 {
		s = s[:j]
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return chainSpec{}, false
	}
	var sp chainSpec
	// A limit past time.Duration's range (about 292 years) would wrap negative.
	const maxLimit = math.MaxInt64 / int64(time.Second)
	if err := json.Unmarshal(b, &sp); err != nil || sp.V < 1 || sp.V > 2 || sp.Segments < 0 || sp.Retries < 0 || sp.Limit < 0 || sp.Limit > maxLimit ||
		sp.Nodes < 0 || sp.GPUs < 0 || sp.Opts < 0 || sp.V == 2 && sp.Args != nil || sp.Signal < 0 || sp.Signal > maxLimit {
		return chainSpec{}, false
	}
	return sp, true
}

// SpecOptions says how many sbatch option words the chain whose
// specification the comment carries was submitted with, and whether the
// comment carries them (a version-1 comment: ParseChainSpec's Args) or
// leaves them out (version 2: recover must be given them).
func SpecOptions(comment string) (n int, carried bool) {
	sp, ok := readSpec(comment)
	switch {
	case !ok:
		return 0, false
	case sp.V == 1:
		return len(sp.Args), true
	}
	return sp.Opts, sp.Opts == 0
}

// NewChainID returns a chain id "c-YYYYMMDD-xxxxxx": the UTC date of now
// and 24 bits from src (seeded per run by the caller and recorded, so ids
// are reproducible in tests and the simulator).
func NewChainID(now time.Time, src rand.Source) string {
	return fmt.Sprintf("c-%s-%06x", now.UTC().Format("20060102"), src.Uint64()&0xffffff)
}

// DecodeSpecText shows a job comment written by ChainComment for people:
// the tag, then the chain's specification in words instead of base64. A
// comment without a readable specification comes back as it is.
func DecodeSpecText(comment string) string {
	i := strings.Index(comment, SpecPrefix)
	c, ok := ParseChainSpec(comment)
	if i < 0 || !ok {
		return comment
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sspec: name %s, script %s, %s, policy %s, max retries %d, limit %s, %d node(s), %d GPU(s)",
		comment[:i], c.Name, c.Script, SegmentsText(c.Segments), c.Policy, c.MaxRetries, secs(c.TimeLimit), c.Nodes, c.GPUs)
	for _, kv := range [][2]string{{"partition", c.Partition}, {"account", c.Account}, {"directory", c.WorkDir}, {"sbatch options", strings.Join(c.Args, " ")}, {"workload", c.Workload}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, ", %s %s", kv[0], kv[1])
		}
	}
	if n, carried := SpecOptions(comment); !carried {
		fmt.Fprintf(&b, ", %d sbatch option word(s) not in the comment", n)
	}
	if c.SignalLead > 0 {
		fmt.Fprintf(&b, ", signal %s before the limit", secs(c.SignalLead))
	}
	return b.String()
}

// SegmentsText renders a chain's length: "until done", "1 segment", "3 segments".
func SegmentsText(n int) string {
	if n == 0 {
		return "until done"
	}
	if n == 1 {
		return "1 segment"
	}
	return strconv.Itoa(n) + " segments"
}

// secs renders a duration to the second, for reasons.
func secs(d time.Duration) string { return d.Round(time.Second).String() }
