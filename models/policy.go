package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/provisioner"
)

// PolicyXGBOnline is xgb with a do-no-harm guard and online thresholds
// (DecisionRule.Online): an xgb model whose directory also holds the guard
// classifier (GuardDir).
const PolicyXGBOnline = "xgb-online"

// Learned policy names: each is loaded from MODELS_DIR/<name>/.
var learnedPolicies = []string{"rf", string(KindRFGolearn), string(KindRFXGB), string(KindXGB), PolicyXGBOnline, string(KindDQN), string(KindPG)}

// PinSuffix names the pinned form of a learned policy: NAME-pin decides as
// NAME where a pin cannot or need not hold the successor (nodes shared
// with its predecessor, whole nodes free) and otherwise submits at once,
// pinned to the predecessor's nodes (provisioner.Pinned). It loads NAME's
// model, and learns from the hand-offs of its own chains.
const PinSuffix = "-pin"

// Ref is a policy name of the registry taken apart: the policy it builds
// on (a baseline or a learned policy) and whether it is a learned
// policy's pinned form (NAME-pin). A baseline's name with the suffix
// ("lead-pin") is not a pinned form: its Base is the whole name, which the
// registry does not know. pin itself is the baseline Pinned(pin, lead).
type Ref struct {
	Base   string // the policy decided by (for NAME-pin: NAME)
	Pinned bool   // a learned policy's pinned form
}

// ParseRef takes a policy name apart (Ref).
func ParseRef(name string) Ref {
	if base, ok := strings.CutSuffix(name, PinSuffix); ok && IsLearned(base) {
		return Ref{Base: base, Pinned: true}
	}
	return Ref{Base: name}
}

// String is the policy's registry name.
func (r Ref) String() string {
	if r.Pinned {
		return r.Base + PinSuffix
	}
	return r.Base
}

// UsesModel reports whether the policy decides with a trained model: a
// learned policy or its pinned form.
func (r Ref) UsesModel() bool { return IsLearned(r.Base) }

// ProvisionerBaselines are the baselines the provisioner itself implements
// (provisioner.BaselinePolicy); the registry delegates these names.
var ProvisionerBaselines = provisioner.BaselineNames()

// ErrUnknownPolicy: a name the registry does not know.
var ErrUnknownPolicy = errors.New("unknown policy")

// ErrNoModel: a learned policy whose model directory does not exist.
var ErrNoModel = errors.New("no trained model")

// PolicyOptions configure PolicyFactory.
type PolicyOptions struct {
	// Probe answers the oracle's questions; only the simulator harness has
	// one. Without it "oracle" is refused (ErrNoProbe).
	Probe OracleProbe
	// Tick is the decision interval the oracle looks ahead by (default 10 min).
	Tick time.Duration
	// Lead is the harness's forced submission before the predecessor's end (default 1 min).
	Lead time.Duration
	// OracleCost prices a gap for the oracle's plan (nil: |gap|).
	OracleCost func(gap time.Duration) float64
	// Baseline builds the provisioner's own baselines (reactive,
	// dependency, lead, start-estimate); the default is
	// provisioner.BaselinePolicy where this build has it.
	Baseline func(name string) (provisioner.Policy, error)
	// Average and Quantile override the baselines' parameters (zero: defaults).
	Average  AveragePolicy
	Quantile QuantilePolicy
	// Load reads a model directory (nil: Load); tests count the reads.
	Load func(dir string, want features.SchemaID) (Model, error)
}

// PolicyNames lists every name the registry resolves, sorted: the oracle
// too, which only the evaluation harness can run (ChainPolicyNames lists
// the others).
func PolicyNames() []string {
	n := append(ChainPolicyNames(), PolicyOracle)
	sort.Strings(n)
	return n
}

// ChainPolicyNames lists, sorted, the policies a chain can be submitted
// with: every name the registry resolves but the oracle, which knows the
// future only inside the simulator.
func ChainPolicyNames() []string {
	n := append([]string{PolicyAverage, PolicyQuantile}, learnedPolicies...)
	for _, l := range learnedPolicies {
		n = append(n, l+PinSuffix)
	}
	n = append(n, ProvisionerBaselines...)
	sort.Strings(n)
	return n
}

// LearnedPolicies lists the learned policies' names (each loaded from a model directory).
func LearnedPolicies() []string { return slices.Clone(learnedPolicies) }

// IsLearned reports whether name is a learned policy (loaded from a model directory).
func IsLearned(name string) bool {
	for _, n := range learnedPolicies {
		if n == name {
			return true
		}
	}
	return false
}

// PolicyFactory resolves registry names to policies: the learned ones (rf,
// rf-golearn, rf-xgb, xgb, xgb-online, dqn, pg) from modelsDir/<name>/,
// their pinned forms (NAME-pin, PinSuffix) from the same models, average,
// quantile and oracle from this package, and reactive, dependency, lead and
// start-estimate from the provisioner's baselines. The result is safe for
// concurrent use.
//
// A learned policy is built once and kept: the next call for its name only
// checks that its files did not change (the meta.json of its model, its
// guard and its workloads' models: size and modification time) and
// returns the same policy; a changed file (a retrained model) is read
// again. Each model file is read once however many policies and calls use
// it, so that a daemon running for months reads a model once per training.
func PolicyFactory(modelsDir string, opts PolicyOptions) provisioner.PolicyFactory {
	if opts.Baseline == nil {
		// The provisioner's baselines with their default options.
		opts.Baseline = func(name string) (provisioner.Policy, error) { return provisioner.BaselinePolicy(name) }
	}
	lc := &learnedCache{dir: modelsDir, load: opts.Load, models: map[string]loadedModel{}, policies: map[string]builtPolicy{}}
	if lc.load == nil {
		lc.load = Load
	}
	return func(name string) (provisioner.Policy, error) {
		base := ParseRef(name).Base // a pinned form uses its base's model, under its own name (its hand-offs are the pinned form's)
		switch base {
		case PolicyAverage:
			p := opts.Average
			return &p, nil
		case PolicyQuantile:
			p := opts.Quantile
			return &p, nil
		case PolicyOracle:
			o, err := NewOracle(opts.Probe, opts.Tick, opts.Lead)
			if err != nil {
				return nil, err
			}
			o.Cost = opts.OracleCost
			return o, nil
		}
		if slices.Contains(ProvisionerBaselines, base) {
			return opts.Baseline(base)
		}
		if !IsLearned(base) {
			return nil, fmt.Errorf("%w %q (known: %v; and %s in mirage eval alone, where it sees the future)", ErrUnknownPolicy, name, ChainPolicyNames(), PolicyOracle)
		}
		return lc.policy(base, name)
	}
}

// learnedCache keeps the learned policies of one models directory and the
// models they were built from, each with the stamp of its files.
type learnedCache struct {
	dir      string
	load     func(dir string, want features.SchemaID) (Model, error)
	mu       sync.Mutex
	models   map[string]loadedModel // by directory below dir: NAME, NAME@WORKLOAD, NAME/guard
	policies map[string]builtPolicy // by policy name (NAME or its pinned form)
}

type loadedModel struct {
	m     Model
	stamp string
}

type builtPolicy struct {
	p     provisioner.Policy
	stamp string
}

// stamp identifies the current version of the model in dir/sub by its
// meta.json's size and modification time ("" when there is none).
func (c *learnedCache) stamp(sub string) string {
	st, err := os.Stat(filepath.Join(c.dir, sub, MetaFile))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
}

// policyStamp is the stamp of every file learned policy base is built
// from: its model, its guard and its workloads' models.
func (c *learnedCache) policyStamp(base string) string {
	parts := []string{c.stamp(base), c.stamp(filepath.Join(base, GuardDir))}
	for _, w := range provisioner.Workloads() {
		parts = append(parts, c.stamp(WorkloadModelName(base, w)))
	}
	return strings.Join(parts, ",")
}

// model is the model in dir/sub, read unless its stamp is the one read
// before. The caller holds mu.
func (c *learnedCache) model(sub string, read func() (Model, error)) (Model, error) {
	st := c.stamp(sub)
	if lm, ok := c.models[sub]; ok && st != "" && lm.stamp == st {
		return lm.m, nil
	}
	m, err := read()
	if err != nil {
		return nil, err
	}
	c.models[sub] = loadedModel{m: m, stamp: st}
	return m, nil
}

// policy builds (or returns the kept) learned policy base under name.
func (c *learnedCache) policy(base, name string) (provisioner.Policy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.policyStamp(base)
	if b, ok := c.policies[name]; ok && b.stamp == st {
		return b.p, nil
	}
	p, err := c.build(base, name)
	if err != nil {
		return nil, err
	}
	var out provisioner.Policy = p
	if name != base {
		out = provisioner.Pinned(name, p)
	}
	c.policies[name] = builtPolicy{p: out, stamp: st}
	return out, nil
}

// build reads learned policy base's models and wraps them as policy name.
// The caller holds mu.
func (c *learnedCache) build(base, name string) (*ModelPolicy, error) {
	m, err := c.model(base, func() (Model, error) { return loadPolicyModel(c.dir, base, c.load) })
	if err != nil {
		return nil, err
	}
	p, err := c.wrap(base, base, name, m)
	if err != nil {
		return nil, err
	}
	// Models fitted for a workload's cost (mirage train --workload W,
	// in DIR/NAME@W) decide for the chains of that workload.
	for _, w := range provisioner.Workloads() {
		wn := WorkloadModelName(base, w)
		if c.stamp(wn) == "" {
			continue
		}
		wm, err := c.model(wn, func() (Model, error) { return loadPolicyModel(c.dir, wn, c.load) })
		if err != nil {
			return nil, err
		}
		wp, err := c.wrap(wn, base, name, wm)
		if err != nil {
			return nil, err
		}
		if p.Workloads == nil {
			p.Workloads = map[string]*ModelPolicy{}
		}
		p.Workloads[w] = wp
	}
	return p, nil
}

// wrap wraps the model of c.dir/dirName, trained for learned policy base,
// as policy name (base or its pinned form), with its guard when its rule
// is online. The caller holds mu.
func (c *learnedCache) wrap(dirName, base, name string, m Model) (*ModelPolicy, error) {
	p, err := NewModelPolicy(name, m)
	if err != nil {
		return nil, err
	}
	if base == PolicyXGBOnline && p.Rule.Online == nil {
		return nil, fmt.Errorf("policy %q: %s holds an xgb model without an online rule (train it with mirage train --model %s)", name, filepath.Join(c.dir, dirName), name)
	}
	if p.Rule.Online.GuardOn() {
		sub := filepath.Join(dirName, GuardDir)
		dir := filepath.Join(c.dir, sub)
		g, err := c.model(sub, func() (Model, error) { return c.load(dir, features.Schema()) })
		if err != nil {
			return nil, fmt.Errorf("policy %q: its guard: %w (retrain it with mirage train --model %s)", name, err, name)
		}
		if g.Meta().Task != Classification {
			return nil, fmt.Errorf("policy %q: %s holds a %s model, want the guard's classifier", name, dir, g.Meta().Task)
		}
		p.Guard = g
	}
	return p, nil
}

// WorkloadModelName is the directory of learned policy name's model fitted
// for a workload's cost: "NAME@WORKLOAD".
func WorkloadModelName(name, workload string) string { return name + "@" + workload }

// LoadPolicyModel reads the model of learned policy name from
// modelsDir/<name>/ and checks that its kind fits the name (rf may hold
// either forest).
func LoadPolicyModel(modelsDir, name string) (Model, error) {
	return loadPolicyModel(modelsDir, name, Load)
}

// loadPolicyModel is LoadPolicyModel reading with load.
func loadPolicyModel(modelsDir, name string, load func(dir string, want features.SchemaID) (Model, error)) (Model, error) {
	if modelsDir == "" {
		return nil, fmt.Errorf("policy %q: %w: no models directory given (train one with mirage train --out DIR)", name, ErrNoModel)
	}
	dir := filepath.Join(modelsDir, name)
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err != nil {
		return nil, fmt.Errorf("policy %q: %w in %s (train it with mirage train --model %s --out %s)", name, ErrNoModel, dir, name, modelsDir)
	}
	m, err := load(dir, features.Schema())
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", name, err)
	}
	k := m.Meta().Kind
	base, _, _ := strings.Cut(name, "@") // a workload's model: NAME@WORKLOAD
	want := ResolveKind(base)
	okKind := k == want || (base == "rf" && (k == KindRFXGB || k == KindRFGolearn))
	if !okKind {
		return nil, fmt.Errorf("policy %q: %s holds a %s model, want %s", name, dir, k, want)
	}
	return m, nil
}

// DefaultDir is the models directory when none is given: $MIRAGE_MODELS,
// else $XDG_DATA_HOME/mirage/models, else ~/.local/share/mirage/models
// (getenv reads the environment). It is where mirage train writes by
// default and where submit and the daemon look for learned policies.
func DefaultDir(getenv func(string) string) string {
	if d := getenv("MIRAGE_MODELS"); d != "" {
		return d
	}
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mirage", "models")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "share", "mirage", "models")
}

// ErrPolicyPanicked wraps the value of a panic in a learned policy, while
// its model was read or while it decided (a model that passed the
// loader's checks but fails in use).
var ErrPolicyPanicked = errors.New("learned policy panicked")

// WithFallback wraps a policy factory for a long-running caller (the
// daemon), so that no model stops a chain, nor the daemon:
//
//   - a learned policy whose model cannot be loaded (missing, another
//     feature schema, unreadable, not the user's own, malformed, or a
//     panic while it is read) is replaced by the baseline fallback (by pin
//     for a learned policy's pinned form, NAME-pin); its decisions carry
//     the baseline's name and reasons saying which learned policy they
//     stand in for and why;
//   - a learned policy that loads is guarded: a decision in which it
//     panics is made by the same baseline instead, its reason naming the
//     learned policy and the panic (ErrPolicyPanicked).
//
// warn (may be nil) is called each time a replacement is made. Unknown
// names stay errors; a model installed later is picked up on the next call.
func WithFallback(f provisioner.PolicyFactory, fallback string, warn func(name string, err error)) provisioner.PolicyFactory {
	if warn == nil {
		warn = func(string, error) {}
	}
	return func(name string) (provisioner.Policy, error) {
		p, err := buildRecovering(f, name)
		ref := ParseRef(name)
		if !ref.UsesModel() {
			return p, err
		}
		fbName := fallback
		if ref.Pinned {
			fbName = provisioner.PolicyPin
		}
		fb, ferr := f(fbName)
		if ferr != nil {
			if err != nil {
				return nil, errors.Join(err, ferr)
			}
			return p, nil // guarded by nothing better than the step's own recover
		}
		if err != nil {
			warn(name, err)
			return &standIn{Policy: fb, prefix: fmt.Sprintf("%s unavailable (%v), %s decides", name, err, fb.Name())}, nil
		}
		return &guarded{Policy: p, fallback: fb, warn: warn}, nil
	}
}

// buildRecovering is f(name), a panic while the policy is built (its
// model read) returned as an error wrapping ErrPolicyPanicked.
func buildRecovering(f provisioner.PolicyFactory, name string) (p provisioner.Policy, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w while its model was read: %v", ErrPolicyPanicked, r)
		}
	}()
	return f(name)
}

// standIn is a fallback policy deciding for an unavailable learned one.
type standIn struct {
	provisioner.Policy
	prefix string
}

func (s *standIn) Decide(obs *provisioner.Observation) (provisioner.Decision, error) {
	d, err := s.Policy.Decide(obs)
	d.Reason = s.prefix + ": " + d.Reason
	return d, err
}

// guarded is a learned policy whose panics are caught: the fallback makes
// a decision in which the learned policy panicked.
type guarded struct {
	provisioner.Policy
	fallback provisioner.Policy
	warn     func(name string, err error)
}

// Decide is the learned policy's decision, or, when it panics, the
// fallback's, its reason saying why.
func (g *guarded) Decide(obs *provisioner.Observation) (d provisioner.Decision, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		perr := fmt.Errorf("%w: %v", ErrPolicyPanicked, r)
		g.warn(g.Name(), perr)
		d, err = g.fallback.Decide(obs)
		d.Reason = fmt.Sprintf("%s failed (%v), %s decides: %s", g.Name(), perr, g.fallback.Name(), d.Reason)
	}()
	return g.Policy.Decide(obs)
}

// LearnsFromHandOffs is the learned policy's (provisioner.HandOffLearner).
func (g *guarded) LearnsFromHandOffs() bool { return provisioner.LearnsFromHandOffs(g.Policy) }

// Unwrap is the learned policy guarded.
func (g *guarded) Unwrap() provisioner.Policy { return g.Policy }

// DefaultLearned is the learned policy `mirage submit` uses when --policy is
// not given and its model is in the models directory: the one with the
// lowest pooled mean |gap| in the walk-forward evaluation
// (docs/results/walk-forward.md, which names it from its own figures).
const DefaultLearned = PolicyXGBOnline

// fallbackLearned stands in for DefaultLearned where only its model is
// trained (a models directory from before xgb-online).
const fallbackLearned = string(KindXGB)

// DefaultPolicy is the policy of a chain submitted without one:
// DefaultLearned when policies can build it (its model is trained), else
// xgb when its model is trained, else lead. warn says why a trained
// default cannot be used (nil when it is used or simply not trained).
func DefaultPolicy(policies provisioner.PolicyFactory) (name string, warn error) {
	return firstBuildable(policies, []string{DefaultLearned, fallbackLearned}, provisioner.PolicyLead)
}

// firstBuildable is the first of names that policies can build, else
// fallback. Names whose model is missing (ErrNoModel) are passed over
// quietly; warn says why each other name cannot be used and what to do.
func firstBuildable(policies provisioner.PolicyFactory, names []string, fallback string) (name string, warn error) {
	var errs []error
	for _, n := range names {
		_, err := policies(n)
		switch {
		case err == nil:
			return n, errors.Join(errs...)
		case !errors.Is(err, ErrNoModel):
			base := ParseRef(n).Base
			errs = append(errs, fmt.Errorf("the default policy %s cannot be used (%v); retrain its model with mirage train --model %s, or pass --policy", n, err, base))
		}
	}
	if len(errs) > 0 && fallback != "" {
		errs = append(errs, fmt.Errorf("this chain uses %s", fallback))
	}
	return fallback, errors.Join(errs...)
}

// DefaultPinned is the policy `mirage submit` uses on a backend that can
// lift a pending job's node list, when DefaultLearned's model is trained:
// its pinned form, the policy with the lowest pooled mean |gap| in the
// walk-forward evaluation (docs/results/walk-forward.md, which checks
// this from its own figures) and the lowest whole-run overhead of
// training runs (whole-run.md).
const DefaultPinned = DefaultLearned + PinSuffix

// DefaultPolicyFor is the policy of a chain of the given workload
// submitted without one to a backend that can do what caps say. On a
// backend that lifts a pending job's node list (Capabilities.Unpins:
// Slurm, the simulator): pin for a
// service (provisioner.WorkloadService), whatever is trained; otherwise
// DefaultPinned when policies can build it, else xgb's pinned form when
// only xgb is trained, else pin. The chain's cost (its workload) then
// decides how the policy submits and when a pin may be lifted early.
// Elsewhere DefaultPolicy. warn says why a trained default cannot be used.
//
// A service's default is pin because, of the policies in whole-run.md,
// it alone starts more of a service's successors without downtime than
// lead at no more overlap in every load class: a learned policy deciding
// with the service cost, under which overlap within its budget is free,
// starts successors up to that budget early (hours of both copies
// serving).
func DefaultPolicyFor(caps provisioner.Capabilities, policies provisioner.PolicyFactory, workload string) (name string, warn error) {
	name, _, warn = DefaultPolicyForSite(caps, policies, workload, "", nil)
	return name, warn
}

// DefaultPolicyForSite is DefaultPolicyFor on a site of the given class
// (sim.SiteClass, "" when unknown), with why in words: on a backend that
// can lift a pending job's node list, a chain that is no service takes
// the first policy ranking lists for the class that policies can build
// (SiteRanking.Choose: the ranking measured on the site grid); where the
// class is unknown or unranked, or none of its policies can be built,
// DefaultPolicyFor's choice.
func DefaultPolicyForSite(caps provisioner.Capabilities, policies provisioner.PolicyFactory, workload, class string, ranking *SiteRanking) (name, why string, warn error) {
	if !caps.Unpins {
		name, warn = DefaultPolicy(policies)
		return name, "this backend cannot lift a pending job's node list: " + DefaultLearned + " when trained, else xgb, else lead", warn
	}
	if workload == provisioner.WorkloadService {
		return provisioner.PolicyPin, "a service: pin starts more successors without downtime than lead at no more overlap (whole-run.md)", nil
	}
	if class != "" && ranking != nil {
		if name, why, ok, warn := ranking.Choose(class, policies); ok {
			return name, why, warn
		}
		why = fmt.Sprintf("site class %s has no ranked policy that can run here", class)
	} else {
		why = "the site's settings are not known"
	}
	name, warn = firstBuildable(policies, []string{DefaultPinned, fallbackLearned + PinSuffix}, provisioner.PolicyPin)
	return name, why + ": " + DefaultPinned + " when trained, else xgb-pin, else pin", warn
}
