package provisioner

import (
	"encoding/json"

	"sigs.k8s.io/yaml"
)

// SnapshotFile is a cluster snapshot as a file holds it: the snapshot and,
// optionally, the history its features look at. On disk it is
// {"snapshot": {...}, "history": [...]} (as mirage predict-wait
// --save-snapshot writes it) or a bare snapshot, in JSON or YAML, with
// field names matched without regard to case.
type SnapshotFile struct {
	Snapshot *Snapshot `json:"snapshot"`
	History  []Job     `json:"history,omitempty"`
	// Bare is set when the file held a bare snapshot (no envelope).
	Bare bool `json:"-"`
}

// DecodeSnapshot decodes a snapshot file. It checks only the syntax and
// the types: what a snapshot must hold is the reader's to check (a time
// for a wait prediction, nodes for a placement).
func DecodeSnapshot(data []byte) (*SnapshotFile, error) {
	var sf SnapshotFile
	if err := yaml.Unmarshal(data, &sf); err == nil && sf.Snapshot != nil {
		return &sf, nil
	}
	var bare Snapshot
	if err := yaml.Unmarshal(data, &bare); err != nil {
		return nil, err
	}
	return &SnapshotFile{Snapshot: &bare, Bare: true}, nil
}

// Encode renders the snapshot file as the CLI writes it: indented JSON
// with a final newline.
func (f SnapshotFile) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
