package slurm

import "testing"

// TestStoresComments reads AccountingStoreFlags as `scontrol show config`
// prints it (22.05: aligned "Key = Value" lines; "(null)" when unset).
func TestStoresComments(t *testing.T) {
	for text, want := range map[string]bool{
		"Configuration data as of 2026-12-07T02:00:00\nAccountingStorageType   = accounting_storage/slurmdbd\nAccountingStoreFlags    = job_comment\n": true,
		"AccountingStoreFlags    = job_env,job_comment,job_script\n":                                                                                   true,
		"AccountingStoreFlags    = (null)\n":                      false,
		"AccountingStoreFlags    = job_env\n":                     false,
		"AccountingStorageType   = accounting_storage/slurmdbd\n": false,
	} {
		cfg, err := ParseConfig([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if got := storesComments(cfg); got != want {
			t.Errorf("%q: keeps comments %v, want %v", text, got, want)
		}
	}
}
