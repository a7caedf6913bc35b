package scenario_test

import (
	"math"
	"testing"
	"time"

	"github.com/mirage-gpu/mirage/models/scenario"
)

func TestGapCost(t *testing.T) {
	site := scenario.GapCost{InterruptionPerHour: 10, OverlapPerGPUHour: 2}
	tests := []struct {
		c    scenario.GapCost
		gap  time.Duration
		gpus int
		want float64
	}{
		{scenario.DefaultGapCost, 2 * time.Hour, 8, 120},                              // published: 60·|2|
		{scenario.DefaultGapCost, -30 * time.Minute, 8, 30},                           // 60·|−0.5|
		{scenario.DefaultGapCost, 0, 8, 0},                                            // exact hand-over
		{site, 90 * time.Minute, 4, 15},                                               // 10·1.5
		{site, -90 * time.Minute, 4, 12},                                              // 2·4·1.5
		{scenario.GapCost{OverlapPerHour: 1, OverlapPerGPUHour: 1}, -time.Hour, 3, 4}, // (1 + 1·3)·1
	}
	for _, tt := range tests {
		if got := tt.c.Cost(tt.gap, tt.gpus); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%+v.Cost(%s, %d) = %v, want %v", tt.c, tt.gap, tt.gpus, got, tt.want)
		}
		if r := tt.c.Reward(tt.gap, tt.gpus); r != -tt.c.Cost(tt.gap, tt.gpus) {
			t.Errorf("Reward %v", r)
		}
	}
}
