package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppendResult(t *testing.T) {
	const header = "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n"
	cases := map[string]struct {
		existing *string // nil: no file
		row      ResultRow
		want     string
	}{
		"new file gets the header": {
			row:  ResultRow{Commit: "a1b2c3d4e5f6", Value: "0.9979", MemoryGB: "44", Status: "keep", Description: "baseline"},
			want: header + "a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\n",
		},
		"empty file gets the header": {
			existing: ptr(""),
			row:      ResultRow{Commit: "b2c3d4e", Value: "1", Status: "discard", Description: "gelu"},
			want:     header + "b2c3d4e\t1.000000\t0.0\tdiscard\tgelu\n",
		},
		"crash records zero": {
			existing: ptr(header),
			row:      ResultRow{Commit: "c3d4e5f", Value: "nan", MemoryGB: "", Status: "crash", Description: "double width (OOM)"},
			want:     header + "c3d4e5f\t0.000000\t0.0\tcrash\tdouble width (OOM)\n",
		},
		"tabs and newlines become spaces": {
			existing: ptr(header + "a1b2c3d\t0.997900\t44.0\tkeep\tbaseline"),
			row:      ResultRow{Commit: "d4e5f6a", Value: "0.5", MemoryGB: "12.345", Status: "keep", Description: "lr\t0.04\nand warmup"},
			want:     header + "a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\nd4e5f6a\t0.500000\t12.3\tkeep\tlr 0.04 and warmup\n",
		},
		"value that is not a number is kept": {
			existing: ptr(header),
			row:      ResultRow{Commit: "e5f6a7b", Value: "n/a", Status: "discard"},
			want:     header + "e5f6a7b\tn/a\t0.0\tdiscard\t\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "results.tsv")
			if tc.existing != nil {
				if err := os.WriteFile(path, []byte(*tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := AppendResult(path, "val_bpb", tc.row); err != nil {
				t.Fatalf("AppendResult: %v", err)
			}
			if diff := cmp.Diff(tc.want, readFile(t, path)); diff != "" {
				t.Errorf("results.tsv (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(s string) *string { return &s }
