package dataset_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/internal/safefile"
	"github.com/mirage-gpu/mirage/models"
	"github.com/mirage-gpu/mirage/models/dataset"
	"github.com/mirage-gpu/mirage/models/features"
	"github.com/mirage-gpu/mirage/models/internal/modeltest"
	"github.com/mirage-gpu/mirage/models/scenario"
)

func TestChainDataDeterministicAcrossWorkers(t *testing.T) {
	sc := modeltest.Scenario(t)
	o := dataset.GenOptions{Protocol: modeltest.Protocol(), From: sc.First.Add(3 * 24 * time.Hour), Until: sc.First.Add(5 * 24 * time.Hour)}
	o.Workers = 1
	a, err := dataset.GenerateChainData(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 3
	b, err := dataset.GenerateChainData(context.Background(), sc, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Episodes) != 16 { // 8 injections (every 6 h over 2 days) × 2 sizes
		t.Fatalf("%d episodes, want 16", len(a.Episodes))
	}
	if !reflect.DeepEqual(a.Episodes, b.Episodes) || a.Probes != b.Probes {
		t.Error("1 and 3 workers gave different datasets")
	}
	// 12 h limit, 1 min lead, 30 min ticks: ticks at 0, 30, …, 690 min (24), + the deadline probe.
	for _, ep := range a.Episodes {
		if len(ep.X) != 24 || len(ep.Gap) != 24 || ep.Tick != 30*time.Minute || ep.PredEnd.Sub(ep.PredStart) != 12*time.Hour {
			t.Fatalf("episode shape: %d ticks, tick %s, run %s", len(ep.X), ep.Tick, ep.PredEnd.Sub(ep.PredStart))
		}
	}
	if a.Probes != 16*25 {
		t.Errorf("%d probes, want 400", a.Probes)
	}
}

func TestChainEpisodeMatchesIndependentProbes(t *testing.T) {
	sc := modeltest.Scenario(t)
	d := modeltest.ChainData(t)
	p := modeltest.Protocol().WithDefaults(sc.Config)
	ep := d.Episodes[len(d.Episodes)-1]
	base, err := sc.NewSim()
	if err != nil {
		t.Fatal(err)
	}
	base.Run(ep.Inject)
	for _, k := range []int{0, 7, 23} {
		c, err := scenario.StartChain(base, p, ep.Inject, ep.Nodes, scenario.ChainID(ep.Inject, ep.Nodes))
		if err != nil {
			t.Fatal(err)
		}
		// Submitting at tick k from a chain that jumped there directly.
		out, err := c.ProbeAt(c.TickTime(k))
		if err != nil {
			t.Fatal(err)
		}
		if out.Gap.Seconds() != ep.Gap[k] {
			t.Errorf("tick %d: probe gap %s, dataset %v s", k, out.Gap, ep.Gap[k])
		}
		obs, err := c.Observe(c.TickTime(k))
		if err != nil {
			t.Fatal(err)
		}
		x, _ := features.Features(obs)
		if !reflect.DeepEqual(x, ep.X[k]) {
			t.Errorf("tick %d: features differ from the dataset's", k)
		}
	}
	c, _ := scenario.StartChain(base, p, ep.Inject, ep.Nodes, scenario.ChainID(ep.Inject, ep.Nodes))
	c.Advance(c.Deadline())
	out, err := c.SubmitSuccessor(nil)
	if err != nil || out.Gap.Seconds() != ep.Reactive {
		t.Errorf("deadline submission gap %s (%v), dataset reactive %v s", out.Gap, err, ep.Reactive)
	}
}

func TestChainDataSaveLoad(t *testing.T) {
	d := modeltest.ChainData(t)
	p := filepath.Join(t.TempDir(), "d.gob.gz")
	if err := dataset.SaveChainData(p, d); err != nil {
		t.Fatal(err)
	}
	back, err := dataset.LoadChainData(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Episodes) != len(d.Episodes) || back.Episodes[3].Gap[5] != d.Episodes[3].Gap[5] || back.Schema.Version != d.Schema.Version {
		t.Error("round trip changed the dataset")
	}
	if _, err := dataset.LoadChainData(filepath.Join("..", "xgb", "testdata", "xgb-small", "meta.json")); !errors.Is(err, models.ErrBadModel) {
		t.Errorf("not a dataset: %v", err)
	}
	// A cache file others may write is not decoded (it could be planted).
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.LoadChainData(p); !errors.Is(err, safefile.ErrNotOwned) {
		t.Errorf("group/other-writable cache: %v, want safefile.ErrNotOwned", err)
	}
	_ = context.Background
}

// FuzzReadChainData: the dataset reader refuses garbage without panicking.
func FuzzReadChainData(f *testing.F) {
	var buf bytes.Buffer
	if err := dataset.WriteChainData(&buf, &dataset.ChainData{Schema: features.Schema(), Episodes: []dataset.ChainEpisode{{Nodes: 1, Gap: []float64{1}, X: [][]float64{{1}}, Censored: []bool{false}}}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := dataset.ReadChainData(bytes.NewReader(b))
		if err == nil && d == nil {
			t.Fatal("nil dataset without an error")
		}
	})
}
